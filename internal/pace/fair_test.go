package pace

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// roundRobin is the fair order by its definition: serve, one release at a
// time, the namespace that would hold the fewest slots, the earliest
// arrival among equals.
func roundRobin(s *slots) []*ticket {
	taken := map[*namespace]int{}
	out := make([]*ticket, 0, len(s.queued))
	for range len(s.queued) {
		var best *namespace
		for _, ns := range s.spaces {
			i := taken[ns]
			if i < len(ns.queue) && (best == nil || ns.placeOf(i).before(best.placeOf(taken[best]))) {
				best = ns
			}
		}
		out = append(out, best.queue[taken[best]])
		taken[best]++
	}
	return out
}

// The heap's merge and the positions it counts agree with the order's
// definition through random arrivals, slots taken and freed, and releases
// forgotten, over enough namespaces for the heap to be several levels deep.
func TestSlots_OrderMatchesRoundRobin(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(42, 7))
	s := newSlots()
	var holders []types.NamespacedName
	for step := range 3000 {
		key := types.NamespacedName{Namespace: fmt.Sprintf("ns%d", rng.IntN(40)), Name: fmt.Sprintf("r%d", step)}
		switch op := rng.IntN(10); {
		case op < 4:
			s.enqueue(key)
		case op < 7 && len(s.queued) > 0:
			order := s.first(1 + rng.IntN(3))
			t := order[rng.IntN(len(order))]
			s.dequeue(t)
			s.take(t.key)
			holders = append(holders, t.key)
		case op < 9 && len(holders) > 0:
			i := rng.IntN(len(holders))
			s.free(holders[i])
			holders = append(holders[:i], holders[i+1:]...)
		case len(s.queued) > 0:
			order := s.first(len(s.queued))
			s.dequeue(order[rng.IntN(len(order))])
		}
		want := roundRobin(&s)
		g.Expect(append([]*ticket{}, s.first(len(s.queued))...)).To(Equal(want), "step %d", step)
		for i, t := range want {
			g.Expect(s.ahead(t)).To(Equal(i), "step %d: %v", step, t.key)
		}
		// A newcomer goes after every release of a level up to its own.
		newcomer := fmt.Sprintf("ns%d", rng.IntN(45))
		level := 0
		if ns, ok := s.spaces[newcomer]; ok {
			level = ns.holding + len(ns.queue)
		}
		n := 0
		for _, t := range want {
			if t.space.placeOf(t.index-t.space.base).level <= level {
				n++
			}
		}
		g.Expect(s.aheadOfNew(newcomer)).To(Equal(n), "step %d: a newcomer of %s", step, newcomer)
	}
	g.Expect(len(s.spaces)).To(BeNumerically("<=", 40))
}
