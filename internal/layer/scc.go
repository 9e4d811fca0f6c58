package layer

import "slices"

// tarjan holds the bookkeeping of Tarjan's strongly connected components
// algorithm: one depth-first pass, linear in layers plus dependsOn items.
type tarjan struct {
	g       *Graph
	index   map[string]int
	low     map[string]int
	onStack map[string]bool
	stack   []string
	next    int
}

// findComponents fills g.comp and g.cyclic. Layers are visited in name order so
// component numbers do not depend on map iteration.
func (g *Graph) findComponents() {
	g.comp = make(map[string]int, len(g.edges))
	t := &tarjan{g: g, index: map[string]int{}, low: map[string]int{}, onStack: map[string]bool{}}
	names := make([]string, 0, len(g.edges))
	for name := range g.edges {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, seen := t.index[name]; !seen {
			t.visit(name)
		}
	}
}

func (t *tarjan) visit(v string) {
	t.index[v], t.low[v] = t.next, t.next
	t.next++
	t.stack = append(t.stack, v)
	t.onStack[v] = true
	for _, w := range t.g.edges[v] {
		if _, known := t.g.edges[w]; !known {
			continue // a layer that does not exist cannot close a cycle
		}
		if _, seen := t.index[w]; !seen {
			t.visit(w)
			t.low[v] = min(t.low[v], t.low[w])
		} else if t.onStack[w] {
			t.low[v] = min(t.low[v], t.index[w])
		}
	}
	if t.low[v] == t.index[v] {
		t.popComponent(v)
	}
}

// popComponent pops the component rooted at v and records whether it is a
// cycle: more than one layer, or a layer that depends on itself.
func (t *tarjan) popComponent(v string) {
	c := len(t.g.cyclic)
	size := 0
	for {
		w := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.onStack[w] = false
		t.g.comp[w] = c
		size++
		if w == v {
			break
		}
	}
	t.g.cyclic = append(t.g.cyclic, size > 1 || slices.Contains(t.g.edges[v], v))
}
