package layer

import (
	"slices"
	"strings"
)

// Node is one AddonsLayer as the dependency graph sees it.
type Node struct {
	// Name of the layer.
	Name string
	// DependsOn is the layer's spec.prereqs.dependsOn, items `<name>@<version>`.
	// Only the part before the first `@` matters for the graph; malformed items
	// are reported by ParseDependency, not here.
	DependsOn []string
}

// Graph is the dependency graph of all layers of a cluster. Kraan had none:
// layers depending on each other stayed ApplyPending forever. The graph lets the
// reconciler tell a cycle (a configuration error: Stalled) from a wait.
//
// A Graph is immutable once built and safe for concurrent reads.
type Graph struct {
	edges map[string][]string // layer → layers it depends on, sorted, no duplicates
	comp  map[string]int      // layer → its strongly connected component
	// cyclic[c] is true when component c holds a cycle: several layers, or one
	// layer that depends on itself.
	cyclic []bool
}

// NewGraph builds the graph of the given layers. Dependencies on layers that
// are not in nodes are kept as edges but can never be part of a cycle.
func NewGraph(nodes []Node) *Graph {
	g := &Graph{edges: make(map[string][]string, len(nodes))}
	for _, n := range nodes {
		targets := g.edges[n.Name]
		for _, item := range n.DependsOn {
			name, _, _ := strings.Cut(item, "@")
			targets = append(targets, name)
		}
		slices.Sort(targets)
		g.edges[n.Name] = slices.Compact(targets)
	}
	g.findComponents()
	return g
}

// InCycle reports whether the layer is part of a dependency cycle. A layer that
// only depends on a cycle is not in it: it just waits.
func (g *Graph) InCycle(name string) bool {
	c, ok := g.comp[name]
	return ok && g.cyclic[c]
}

// CycleOf returns the shortest dependency cycle through the layer, starting and
// ending with it (["a", "b", "a"]; ["a", "a"] for a layer depending on itself),
// or nil when the layer is in no cycle. Among cycles of equal length the
// alphabetically first path wins, so the answer is stable between reconciles.
func (g *Graph) CycleOf(name string) []string {
	if !g.InCycle(name) {
		return nil
	}
	return g.shortestCycle(name)
}

// FindCycles returns one cycle per group of layers that depend on each other
// (strongly connected component), each starting at its alphabetically first
// layer, sorted by that layer. Every layer of such a group is in a cycle, though
// not always in the one listed: use CycleOf for a given layer.
func (g *Graph) FindCycles() [][]string {
	first := make(map[int]string)
	for name, c := range g.comp {
		if g.cyclic[c] && (first[c] == "" || name < first[c]) {
			first[c] = name
		}
	}
	cycles := make([][]string, 0, len(first))
	for _, name := range first {
		cycles = append(cycles, g.shortestCycle(name))
	}
	slices.SortFunc(cycles, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return cycles
}

// FormatCycle renders a cycle for a condition message: "a → b → a".
func FormatCycle(cycle []string) string { return strings.Join(cycle, " → ") }

// CycleMessage is the Stalled message of a layer in a cycle, e.g.
// "dependency cycle: a → b → a: remove one of these dependsOn items".
func CycleMessage(cycle []string) string {
	return "dependency cycle: " + FormatCycle(cycle) + ": remove one of these dependsOn items"
}

// shortestCycle walks breadth-first from start, inside start's component only,
// until an edge leads back to start. Sorted edges make the walk deterministic.
func (g *Graph) shortestCycle(start string) []string {
	parent := map[string]string{start: ""}
	queue := []string{start}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		for _, next := range g.edges[at] {
			if next == start {
				return append(pathTo(parent, at), start)
			}
			if _, seen := parent[next]; seen || !g.sameComponent(next, start) {
				continue
			}
			parent[next] = at
			queue = append(queue, next)
		}
	}
	return nil // unreachable for a layer in a cyclic component
}

// sameComponent reports whether a and b are layers of the same component;
// a dependency on a missing layer belongs to none.
func (g *Graph) sameComponent(a, b string) bool {
	ca, okA := g.comp[a]
	cb, okB := g.comp[b]
	return okA && okB && ca == cb
}

// pathTo follows parent links back from at to the walk's start.
func pathTo(parent map[string]string, at string) []string {
	var path []string
	for ; at != ""; at = parent[at] {
		path = append(path, at)
	}
	slices.Reverse(path)
	return path
}
