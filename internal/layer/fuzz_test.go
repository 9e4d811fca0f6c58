package layer

import (
	"slices"
	"testing"
)

// FuzzParseDependency feeds arbitrary dependsOn items to ParseDependency. It
// proves that parsing never panics and that an accepted item round-trips: its
// String form is the item itself and parses back to the same Dependency.
func FuzzParseDependency(f *testing.F) {
	for _, seed := range []string{
		"base@0.1.0", "apps@v1.2.3-rc.1+build", "a.b-c@x", "base", "base@", "@1.0", "a@b@c", "base@1 0", "Base@1", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, item string) {
		dep, err := ParseDependency(item)
		if err != nil {
			return
		}
		if dep.String() != item {
			t.Fatalf("%q parsed to %#v, which formats as %q", item, dep, dep.String())
		}
		again, err := ParseDependency(dep.String())
		if err != nil || again != dep {
			t.Fatalf("%q parsed to %#v; its String %q parses to %#v, %v", item, dep, dep.String(), again, err)
		}
	})
}

// FuzzGraphCycles builds a dependency graph of up to 8 layers from arbitrary
// bytes (each byte an edge: its high nibble depends on its low nibble, mod
// the layer count) and checks the cycle answers against a plain
// reachability search: a layer is InCycle exactly when it can reach itself,
// and CycleOf returns a closed walk along real edges through it.
func FuzzGraphCycles(f *testing.F) {
	for _, seed := range [][]byte{{}, {0x00}, {0x01, 0x10}, {0x01, 0x12, 0x20}, {0x01, 0x12, 0x23}, {0x77, 0x65, 0x56}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const layers = 8
		name := func(i byte) string { return string(rune('a' + i%layers)) }
		deps := map[string][]string{}
		for _, b := range data {
			from, to := name(b>>4), name(b&0x0f)
			deps[from] = append(deps[from], to+"@0.1.0")
		}
		nodes := make([]Node, 0, layers)
		for i := range byte(layers) {
			nodes = append(nodes, Node{Name: name(i), DependsOn: deps[name(i)]})
		}
		g := NewGraph(nodes)
		for _, n := range nodes {
			checkCycleAnswers(t, g, n.Name)
		}
	})
}

// checkCycleAnswers compares InCycle and CycleOf for one layer with a plain
// breadth-first search of the graph's edges.
func checkCycleAnswers(t *testing.T, g *Graph, name string) {
	t.Helper()
	want := reaches(g, name, name)
	if got := g.InCycle(name); got != want {
		t.Fatalf("InCycle(%s) = %v, reachability says %v; edges %v", name, got, want, g.edges)
	}
	cycle := g.CycleOf(name)
	if !want {
		if cycle != nil {
			t.Fatalf("CycleOf(%s) = %v for a layer in no cycle", name, cycle)
		}
		return
	}
	if len(cycle) < 2 || cycle[0] != name || cycle[len(cycle)-1] != name {
		t.Fatalf("CycleOf(%s) = %v: not a closed walk through it", name, cycle)
	}
	for i := 0; i+1 < len(cycle); i++ {
		if !slices.Contains(g.edges[cycle[i]], cycle[i+1]) {
			t.Fatalf("CycleOf(%s) = %v: %s does not depend on %s", name, cycle, cycle[i], cycle[i+1])
		}
	}
}

// reaches says whether to can be reached from from along one or more edges.
func reaches(g *Graph, from, to string) bool {
	seen := map[string]bool{}
	queue := []string{from}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		for _, next := range g.edges[at] {
			if next == to {
				return true
			}
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return false
}
