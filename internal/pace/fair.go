package pace

import (
	"container/heap"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The fair order of the queue (issue #42, item 7). Slots used to go in
// arrival order, so one tenant applying 24 slow releases held every slot and
// another tenant's release waited behind all of them. Now the next slot goes
// to the queued release whose namespace holds the fewest slots, the earliest
// arrival first among equals, and within a namespace in arrival order: round
// robin across namespaces, FIFO within one. A namespace's backlog delays its
// own releases; a newcomer namespace, holding nothing, is next as soon as a
// slot frees, and takes a free one at once: only the releases of namespaces
// that hold none either and queued earlier go before it.
//
// A release's place in that order is its level, the slots its namespace
// would hold when it is served (those held now plus the namespace's
// releases queued before it), then its arrival. Serving the namespace with
// the fewest slots one release at a time is the same as sorting every
// queued release by (level, arrival): a namespace's levels rise by one per
// release. The waiting namespaces are kept in a heap by their first
// release's place, so the releases the free slots are for are a merge of
// the queues at the top of the heap (O(n log n) for n free slots), and a
// release's position a sum over the namespaces with a release before it:
// neither scans the queue, nor the namespaces whose releases all come
// later. Only a position behind thousands of namespaces, each with a
// release first, costs a visit to each (tens of microseconds).
//
// There is no separate cap at a namespace's fair share (the limit divided
// by the namespaces holding or waiting). Whenever a waiting namespace is
// within its share, the fewest-slots rule already serves it, or one holding
// fewer, before any namespace above its share. When every waiting namespace
// is above its share (the limit shrank, or namespaces that wait for nothing
// hold slots) a cap would leave the free slot idle while releases wait,
// which is the cluster's time lost; a namespace that arrives later still
// gets the next slot that frees.

// slots are the releases holding a slot and the queue for one, by
// namespace.
type slots struct {
	holding map[types.NamespacedName]*namespace
	// queued are the queued releases by key: every reconcile that starts no
	// run calls Forget, which must find its ticket without a scan.
	queued map[types.NamespacedName]*ticket
	// spaces are the namespaces holding a slot or waiting for one; a
	// namespace with neither is dropped, so ten thousand tenants seen once
	// leave nothing behind.
	spaces map[string]*namespace
	// waiting are the namespaces with a queue, a min-heap by the place of
	// their first release.
	waiting waitHeap
	// arrivals numbers the tickets in the order they joined.
	arrivals uint64
}

// namespace is one namespace's share: the slots it holds and its queue.
type namespace struct {
	name    string
	holding int
	// queue is in arrival order; queue[i] has index base+i, so taking the
	// first ticket (the usual case) renumbers none.
	queue []*ticket
	base  int
	// waitAt is the namespace's index in slots.waiting, -1 when it has no
	// queue.
	waitAt int
}

// ticket is a queued release and when its turn came (zero: not yet).
type ticket struct {
	key     types.NamespacedName
	space   *namespace
	arrival uint64
	index   int
	turnAt  time.Time
}

// place orders queued releases: by level, the slots their namespace would
// hold when they are served, then by arrival.
type place struct {
	level   int
	arrival uint64
}

func (p place) before(o place) bool {
	return p.level < o.level || p.level == o.level && p.arrival < o.arrival
}

// placeOf is the place of the i-th release of ns's queue.
func (ns *namespace) placeOf(i int) place {
	return place{level: ns.holding + i, arrival: ns.queue[i].arrival}
}

// countBefore is the number of ns's queued releases before p.
func (ns *namespace) countBefore(p place) int {
	at := p.level - ns.holding
	switch {
	case at < 0:
		return 0
	case at >= len(ns.queue):
		return len(ns.queue)
	case ns.queue[at].arrival < p.arrival:
		return at + 1
	default:
		return at
	}
}

func newSlots() slots {
	return slots{holding: map[types.NamespacedName]*namespace{}, queued: map[types.NamespacedName]*ticket{},
		spaces: map[string]*namespace{}}
}

// held is the number of releases holding a slot.
func (s *slots) held() int { return len(s.holding) }

// take gives key a slot.
func (s *slots) take(key types.NamespacedName) {
	ns := s.space(key.Namespace)
	ns.holding++
	s.holding[key] = ns
	s.reorder(ns)
}

// free frees key's slot, if it holds one.
func (s *slots) free(key types.NamespacedName) {
	ns, ok := s.holding[key]
	if !ok {
		return
	}
	delete(s.holding, key)
	ns.holding--
	s.reorder(ns)
	s.dropIfIdle(ns)
}

// enqueue puts key at the end of its namespace's queue.
func (s *slots) enqueue(key types.NamespacedName) {
	t := &ticket{key: key, space: s.space(key.Namespace)}
	s.append(t)
	s.queued[key] = t
}

// dequeue takes t out of the queue.
func (s *slots) dequeue(t *ticket) {
	s.remove(t)
	delete(s.queued, t.key)
	s.dropIfIdle(t.space)
}

// requeue moves t to the end of its namespace's queue, as a release that
// arrives now.
func (s *slots) requeue(t *ticket) {
	s.remove(t)
	s.append(t)
}

func (s *slots) append(t *ticket) {
	ns := t.space
	s.arrivals++
	t.arrival = s.arrivals
	t.index = ns.base + len(ns.queue)
	ns.queue = append(ns.queue, t)
	if len(ns.queue) == 1 {
		heap.Push(&s.waiting, ns)
	}
}

// remove takes t out of its namespace's queue; the namespace stops
// waiting when it was the last.
func (s *slots) remove(t *ticket) {
	ns := t.space
	i := t.index - ns.base
	switch {
	case len(ns.queue) == 1:
		heap.Remove(&s.waiting, ns.waitAt)
		ns.queue, ns.base = nil, 0
	case i == 0:
		ns.queue[0] = nil
		ns.queue = ns.queue[1:]
		ns.base++
		s.reorder(ns)
	default:
		ns.queue = slices.Delete(ns.queue, i, i+1)
		for _, later := range ns.queue[i:] {
			later.index--
		}
	}
}

// reorder restores the heap after ns's first place changed.
func (s *slots) reorder(ns *namespace) {
	if ns.waitAt >= 0 {
		heap.Fix(&s.waiting, ns.waitAt)
	}
}

func (s *slots) space(name string) *namespace {
	ns, ok := s.spaces[name]
	if !ok {
		ns = &namespace{name: name, waitAt: -1}
		s.spaces[name] = ns
	}
	return ns
}

func (s *slots) dropIfIdle(ns *namespace) {
	if ns.holding == 0 && len(ns.queue) == 0 {
		delete(s.spaces, ns.name)
	}
}

// ahead is the number of queued releases that go before t.
func (s *slots) ahead(t *ticket) int {
	i := t.index - t.space.base
	return i + s.countBefore(0, t.space.placeOf(i), t.space)
}

// aheadOfNew is the number of queued releases that would go before a
// release of namespace name that joined now.
func (s *slots) aheadOfNew(name string) int {
	ns, ok := s.spaces[name]
	if !ok {
		ns = &namespace{name: name, waitAt: -1}
	}
	p := place{level: ns.holding + len(ns.queue), arrival: math.MaxUint64}
	return len(ns.queue) + s.countBefore(0, p, ns)
}

// countBefore counts the queued releases before p of the namespaces at and
// below node in the waiting heap, own's aside. A namespace with none
// before p has nothing below it in the heap that is.
func (s *slots) countBefore(node int, p place, own *namespace) int {
	if node >= len(s.waiting) {
		return 0
	}
	ns := s.waiting[node]
	n := ns.countBefore(p)
	if n == 0 {
		return 0
	}
	if ns == own {
		n = 0
	}
	return n + s.countBefore(2*node+1, p, own) + s.countBefore(2*node+2, p, own)
}

// first returns the first n queued releases in the fair order. It merges
// the namespaces' queues, visiting a namespace of the heap only once its
// parent's first release is out: nothing below a namespace goes before
// that release.
func (s *slots) first(n int) []*ticket {
	if n <= 0 || len(s.waiting) == 0 {
		return nil
	}
	c := cursors{waiting: s.waiting}
	heap.Push(&c, cursor{})
	var out []*ticket
	for len(out) < n && c.Len() > 0 {
		next := heap.Pop(&c).(cursor)
		ns := s.waiting[next.node]
		out = append(out, ns.queue[next.taken])
		if next.taken+1 < len(ns.queue) {
			heap.Push(&c, cursor{node: next.node, taken: next.taken + 1})
		}
		if next.taken == 0 {
			for _, child := range []int{2*next.node + 1, 2*next.node + 2} {
				if child < len(s.waiting) {
					heap.Push(&c, cursor{node: child})
				}
			}
		}
	}
	return out
}

// waitHeap is a min-heap of namespaces by their first release's place.
type waitHeap []*namespace

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].placeOf(0).before(h[j].placeOf(0)) }
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].waitAt, h[j].waitAt = i, j
}

func (h *waitHeap) Push(x any) {
	ns := x.(*namespace)
	ns.waitAt = len(*h)
	*h = append(*h, ns)
}

func (h *waitHeap) Pop() any {
	old := *h
	ns := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	ns.waitAt = -1
	return ns
}

// cursor is a namespace of the waiting heap (its index) and how many of its
// releases a merge took.
type cursor struct{ node, taken int }

// cursors is a min-heap of cursors by the place of their next release.
type cursors struct {
	waiting waitHeap
	heap    []cursor
}

func (c *cursors) at(i int) place {
	return c.waiting[c.heap[i].node].placeOf(c.heap[i].taken)
}

func (c *cursors) Len() int           { return len(c.heap) }
func (c *cursors) Less(i, j int) bool { return c.at(i).before(c.at(j)) }
func (c *cursors) Swap(i, j int)      { c.heap[i], c.heap[j] = c.heap[j], c.heap[i] }
func (c *cursors) Push(x any)         { c.heap = append(c.heap, x.(cursor)) }

func (c *cursors) Pop() any {
	x := c.heap[len(c.heap)-1]
	c.heap = c.heap[:len(c.heap)-1]
	return x
}
