// Package graph draws the dependency graph of layers and HelmReleases: DOT
// text, and SVG or PNG rendered in process by Graphviz compiled to
// WebAssembly (github.com/goccy/go-graphviz), so neither cgo nor a Graphviz
// install is needed. Nodes are filled by state; edges point from a dependent
// to what it depends on; cycles are drawn in red and named in the label.
package graph

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/goccy/go-graphviz"

	"github.com/kraan-io/kraan-operator/internal/layer"
)

// Tone is a node's state class, which picks its colour.
type Tone string

// The tones and their fill colours.
const (
	Good    Tone = "good"
	Bad     Tone = "bad"
	Busy    Tone = "busy"
	Unknown Tone = "unknown"
)

// Fills are the fill colours of the tones, also what the tests read back.
var Fills = map[Tone]string{Good: "#c8e6c9", Bad: "#ffcdd2", Busy: "#fff9c4", Unknown: "#eeeeee"}

// Node is a layer or a HelmRelease.
type Node struct {
	// ID is unique in the graph: "layer/base", "helmrelease/apps/shop".
	ID string
	// Label is shown: the name and the state.
	Label string
	Tone  Tone
	// DependsOn are the IDs of the nodes this one depends on.
	DependsOn []string
	// Group is the ID of the layer a HelmRelease belongs to, and a layer's
	// own ID ("" for none): the layer and its releases are drawn in one box.
	Group string
}

// Graph is what is drawn.
type Graph struct {
	Nodes []Node
}

// Cycles returns the dependency cycles, each as IDs from its first node back
// to it, sorted.
func (g *Graph) Cycles() [][]string {
	nodes := make([]layer.Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		nodes = append(nodes, layer.Node{Name: n.ID, DependsOn: n.DependsOn})
	}
	return layer.NewGraph(nodes).FindCycles()
}

// DOT writes the graph in Graphviz's language, deterministically.
func (g *Graph) DOT(out io.Writer) error {
	cycles := g.Cycles()
	inCycle := cycleEdges(cycles)
	var b strings.Builder
	b.WriteString("digraph kraan {\n  rankdir=BT;\n  node [shape=box style=\"rounded,filled\" fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\"];\n")
	if len(cycles) > 0 {
		names := make([]string, 0, len(cycles))
		for _, c := range cycles {
			names = append(names, "dependency cycle: "+layer.FormatCycle(c))
		}
		fmt.Fprintf(&b, "  label=%s;\n  labelloc=t;\n  fontcolor=\"#c62828\";\n", quote(strings.Join(names, "\n")))
	}
	nodes := append([]Node(nil), g.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	groups := map[string][]Node{}
	for _, n := range nodes {
		groups[n.Group] = append(groups[n.Group], n)
	}
	for _, n := range groups[""] {
		writeNode(&b, "  ", n)
	}
	for _, group := range sortedKeys(groups) {
		if group == "" {
			continue
		}
		fmt.Fprintf(&b, "  subgraph %s {\n    label=%s;\n    style=rounded;\n    color=\"#9e9e9e\";\n", quote("cluster_"+group), quote(group))
		for _, n := range groups[group] {
			writeNode(&b, "    ", n)
		}
		b.WriteString("  }\n")
	}
	for _, n := range nodes {
		deps := append([]string(nil), n.DependsOn...)
		sort.Strings(deps)
		for _, d := range deps {
			attrs := ""
			if inCycle[n.ID+"\x00"+d] {
				attrs = " [color=\"#c62828\" penwidth=2]"
			}
			fmt.Fprintf(&b, "  %s -> %s%s;\n", quote(n.ID), quote(d), attrs)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(out, b.String())
	return err
}

func writeNode(b *strings.Builder, indent string, n Node) {
	fill, ok := Fills[n.Tone]
	if !ok {
		fill = Fills[Unknown]
	}
	fmt.Fprintf(b, "%s%s [label=%s fillcolor=%s];\n", indent, quote(n.ID), quote(n.Label), quote(fill))
}

// cycleEdges are the edges "from\x00to" on the cycles.
func cycleEdges(cycles [][]string) map[string]bool {
	edges := map[string]bool{}
	for _, c := range cycles {
		for i := 0; i+1 < len(c); i++ {
			edges[c[i]+"\x00"+c[i+1]] = true
		}
	}
	return edges
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quote is a DOT string literal.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// Format is an output of Render.
type Format string

// The formats Render draws.
const (
	SVG Format = "svg"
	PNG Format = "png"
)

// Render lays the graph out and draws it as SVG or PNG, in process.
func (g *Graph) Render(ctx context.Context, format Format, out io.Writer) error {
	var dot bytes.Buffer
	if err := g.DOT(&dot); err != nil {
		return err
	}
	parsed, err := graphviz.ParseBytes(dot.Bytes())
	if err != nil {
		return fmt.Errorf("parsing the graph: %w", err)
	}
	defer func() { _ = parsed.Close() }()
	gv, err := graphviz.New(ctx)
	if err != nil {
		return fmt.Errorf("starting Graphviz: %w", err)
	}
	defer func() { _ = gv.Close() }()
	f := graphviz.SVG
	if format == PNG {
		f = graphviz.PNG
	}
	if err := gv.Render(ctx, parsed, f, out); err != nil {
		return fmt.Errorf("rendering the graph as %s: %w", format, err)
	}
	return nil
}
