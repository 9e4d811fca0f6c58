package fair

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A freed place goes to the namespace holding the fewest, however many of
// another namespace's wait before it; within a namespace, in arrival order.
func TestSlots_AFreedPlaceGoesToTheNamespaceHoldingTheFewest(t *testing.T) {
	g := NewWithT(t)
	s := NewSlots(2)
	ctx := context.Background()
	g.Expect(s.Acquire(ctx, "flood")).To(Succeed())
	g.Expect(s.Acquire(ctx, "flood")).To(Succeed())

	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	waiting := func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiting) }
	granted := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, order...) }
	for i, w := range []struct{ ns, name string }{{"flood", "flood-3"}, {"flood", "flood-4"}, {"flood", "flood-5"}, {"quiet", "quiet-1"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Expect(s.Acquire(ctx, w.ns)).To(Succeed())
			mu.Lock()
			order = append(order, w.name)
			mu.Unlock()
		}()
		g.Eventually(waiting).Should(Equal(i + 1)) // queued in this order
	}
	for i, want := range [][]string{{"quiet-1"}, {"quiet-1", "flood-3"}, {"quiet-1", "flood-3", "flood-4"}, {"quiet-1", "flood-3", "flood-4", "flood-5"}} {
		s.Release(map[int]string{0: "flood", 1: "flood", 2: "quiet", 3: "flood"}[i])
		g.Eventually(granted).Should(Equal(want))
	}
	wg.Wait()
	g.Expect(s.Held("flood")).To(Equal(2))
}

// A waiter that gives up leaves no place taken.
func TestSlots_AcquireGivesUpWithItsContext(t *testing.T) {
	g := NewWithT(t)
	s := NewSlots(1)
	g.Expect(s.Acquire(context.Background(), "a")).To(Succeed())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	g.Expect(s.Acquire(ctx, "b")).To(MatchError(context.DeadlineExceeded))
	s.Release("a")
	g.Expect(s.Acquire(context.Background(), "c")).To(Succeed(), "the place is free again")
	g.Expect(s.Held("b")).To(BeZero())
}

// With one place, namespaces take turns: a namespace holding nothing after
// its release does not go before one that has not been served.
func TestSlots_OnePlaceTakesTurns(t *testing.T) {
	g := NewWithT(t)
	s := NewSlots(1)
	ctx := context.Background()
	g.Expect(s.Acquire(ctx, "flood")).To(Succeed())
	var mu sync.Mutex
	var order []string
	waiting := func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiting) }
	for i, ns := range []string{"flood", "flood", "quiet"} {
		go func() {
			g.Expect(s.Acquire(ctx, ns)).To(Succeed())
			mu.Lock()
			order = append(order, ns)
			mu.Unlock()
		}()
		g.Eventually(waiting).Should(Equal(i + 1))
	}
	s.Release("flood")
	g.Eventually(func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, order...) }).Should(Equal([]string{"quiet"}))
	s.Release("quiet")
	g.Eventually(func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, order...) }).Should(Equal([]string{"quiet", "flood"}))
	s.Release("flood")
	g.Eventually(func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, order...) }).Should(HaveLen(3))
	s.Release("flood")
	g.Expect(s.served).To(BeEmpty(), "idle namespaces are forgotten")
}
