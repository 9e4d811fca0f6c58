package layer

import (
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
)

// kraanLayers is Kraan's own example: bootstrap → base → mgmt → apps, apps also
// on base (a diamond, not a cycle).
var kraanLayers = []Node{
	{Name: "bootstrap"},
	{Name: "base", DependsOn: []string{"bootstrap@0.1.01"}},
	{Name: "mgmt", DependsOn: []string{"base@0.1.01"}},
	{Name: "apps", DependsOn: []string{"base@0.1.01", "mgmt@0.1.01"}},
}

func TestGraph_CycleOf(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		layer string
		want  []string
	}{
		{
			name:  "self dependency",
			nodes: []Node{{Name: "a", DependsOn: []string{"a@1"}}},
			layer: "a", want: []string{"a", "a"},
		},
		{
			name:  "two layers, from a",
			nodes: []Node{{Name: "a", DependsOn: []string{"b@1"}}, {Name: "b", DependsOn: []string{"a@1"}}},
			layer: "a", want: []string{"a", "b", "a"},
		},
		{
			name:  "two layers, from b",
			nodes: []Node{{Name: "a", DependsOn: []string{"b@1"}}, {Name: "b", DependsOn: []string{"a@1"}}},
			layer: "b", want: []string{"b", "a", "b"},
		},
		{
			name: "three layers",
			nodes: []Node{
				{Name: "a", DependsOn: []string{"c@1"}}, {Name: "b", DependsOn: []string{"a@1"}},
				{Name: "c", DependsOn: []string{"b@1"}},
			},
			layer: "b", want: []string{"b", "a", "c", "b"},
		},
		{
			name: "shortest of two cycles through the layer",
			nodes: []Node{
				{Name: "a", DependsOn: []string{"b@1", "d@1"}}, {Name: "b", DependsOn: []string{"c@1"}},
				{Name: "c", DependsOn: []string{"a@1"}}, {Name: "d", DependsOn: []string{"a@1"}},
			},
			layer: "a", want: []string{"a", "d", "a"},
		},
		{name: "diamond is not a cycle", nodes: kraanLayers, layer: "apps", want: nil},
		{name: "diamond root", nodes: kraanLayers, layer: "bootstrap", want: nil},
		{
			name: "depending on a cycle is not being in it",
			nodes: []Node{
				{Name: "a", DependsOn: []string{"b@1"}}, {Name: "b", DependsOn: []string{"a@1"}},
				{Name: "apps", DependsOn: []string{"a@1"}},
			},
			layer: "apps", want: nil,
		},
		{
			name:  "missing dependency is not a cycle",
			nodes: []Node{{Name: "a", DependsOn: []string{"ghost@1"}}},
			layer: "a", want: nil,
		},
		{name: "unknown layer", nodes: kraanLayers, layer: "nope", want: nil},
		{
			name:  "duplicate and version-less items",
			nodes: []Node{{Name: "a", DependsOn: []string{"b@1", "b@2"}}, {Name: "b", DependsOn: []string{"a"}}},
			layer: "b", want: []string{"b", "a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			graph := NewGraph(tt.nodes)
			g.Expect(graph.CycleOf(tt.layer)).To(Equal(tt.want))
			g.Expect(graph.InCycle(tt.layer)).To(Equal(tt.want != nil))
		})
	}
}

func TestGraph_FindCycles(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		want  [][]string
	}{
		{name: "kraan example has none", nodes: kraanLayers, want: [][]string{}},
		{name: "no layers", nodes: nil, want: [][]string{}},
		{
			name: "one per component, sorted by first layer",
			nodes: []Node{
				{Name: "z", DependsOn: []string{"z@1"}},
				{Name: "c", DependsOn: []string{"b@1"}}, {Name: "b", DependsOn: []string{"c@1"}},
				{Name: "x", DependsOn: []string{"y@1"}}, {Name: "y", DependsOn: []string{"w@1"}},
				{Name: "w", DependsOn: []string{"x@1"}},
				{Name: "apps", DependsOn: []string{"b@1", "z@1"}},
			},
			want: [][]string{{"b", "c", "b"}, {"w", "x", "y", "w"}, {"z", "z"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(NewGraph(tt.nodes).FindCycles()).To(Equal(tt.want))
		})
	}
}

func TestGraph_FindCycles_inputOrderDoesNotMatter(t *testing.T) {
	g := NewWithT(t)
	nodes := []Node{
		{Name: "a", DependsOn: []string{"b@1", "c@1"}}, {Name: "b", DependsOn: []string{"c@1", "a@1"}},
		{Name: "c", DependsOn: []string{"a@1", "b@1"}}, {Name: "d", DependsOn: []string{"d@1"}},
	}
	want := NewGraph(nodes).FindCycles()
	g.Expect(want).To(Equal([][]string{{"a", "b", "a"}, {"d", "d"}}))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		graph := NewGraph(nodes)
		g.Expect(graph.FindCycles()).To(Equal(want))
		g.Expect(graph.CycleOf("c")).To(Equal([]string{"c", "a", "c"}))
	}
}

func TestCycleMessage_arrows(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CycleMessage([]string{"a", "b", "a"})).To(Equal(
		"dependency cycle: a → b → a: remove one of these dependsOn items"))
	g.Expect(FormatCycle([]string{"a", "a"})).To(Equal("a → a"))
}
