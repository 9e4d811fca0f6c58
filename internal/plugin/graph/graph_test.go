package graph

import (
	"bytes"
	"encoding/xml"
	"testing"

	. "github.com/onsi/gomega"
)

func TestGraph_DOT_DrawsGroupsEdgesAndCycles(t *testing.T) {
	g := NewWithT(t)
	gr := &Graph{Nodes: []Node{
		{ID: "layer/a", Label: "a", Tone: Good, DependsOn: []string{"layer/b"}, Group: "layer/a"},
		{ID: "layer/b", Label: "b", Tone: Bad, DependsOn: []string{"layer/a"}, Group: "layer/b"},
		{ID: "helmrelease/x/r", Label: "x/r \"quoted\"", Tone: Busy, Group: "layer/a"},
	}}
	var out bytes.Buffer
	g.Expect(gr.DOT(&out)).To(Succeed())
	dot := out.String()
	g.Expect(dot).To(ContainSubstring(`label="dependency cycle: layer/a → layer/b → layer/a";`))
	g.Expect(dot).To(ContainSubstring(`"layer/a" -> "layer/b" [color="#c62828" penwidth=2];`))
	g.Expect(dot).To(ContainSubstring(`subgraph "cluster_layer/a" {`))
	g.Expect(dot).To(ContainSubstring(`"helmrelease/x/r" [label="x/r \"quoted\"" fillcolor="#fff9c4"];`))
	g.Expect(dot).To(ContainSubstring(`"layer/b" [label="b" fillcolor="#ffcdd2"];`))
}

func TestGraph_DOT_NoCycleNoLabel(t *testing.T) {
	g := NewWithT(t)
	gr := &Graph{Nodes: []Node{{ID: "layer/a", DependsOn: []string{"layer/b"}}, {ID: "layer/b"}}}
	g.Expect(gr.Cycles()).To(BeEmpty())
	var out bytes.Buffer
	g.Expect(gr.DOT(&out)).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("dependency cycle"))
	g.Expect(out.String()).To(ContainSubstring(`"layer/a" -> "layer/b";`))
}

func TestGraph_Render_SVGParses(t *testing.T) {
	g := NewWithT(t)
	gr := &Graph{Nodes: []Node{{ID: "layer/a", Label: "a", Tone: Good}}}
	var out bytes.Buffer
	g.Expect(gr.Render(t.Context(), SVG, &out)).To(Succeed())
	var doc struct {
		XMLName xml.Name `xml:"svg"`
	}
	g.Expect(xml.Unmarshal(out.Bytes(), &doc)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring(Fills[Good]))
}
