package pace

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func release(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "apps", Name: fmt.Sprintf("r%d", i)}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func newTestPacer(opts Options) (*Pacer, *[]types.NamespacedName, *fakeClock) {
	clock := &fakeClock{now: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	var turns []types.NamespacedName
	opts.OnTurn = func(k types.NamespacedName) { turns = append(turns, k) }
	opts.Now = clock.Now
	return New(opts), &turns, clock
}

func TestAdmit_QueuesInArrivalOrderBeyondTheLimit(t *testing.T) {
	g := NewWithT(t)
	p, turns, _ := newTestPacer(Options{})
	for i := range initialLimit {
		ok, _ := p.Admit(release(i))
		g.Expect(ok).To(BeTrue(), "release %d", i)
	}
	for i := initialLimit; i < initialLimit+3; i++ {
		ok, pos := p.Admit(release(i))
		g.Expect(ok).To(BeFalse())
		g.Expect(pos).To(Equal(Position{Ahead: i - initialLimit, Rolling: initialLimit, Limit: initialLimit}))
	}
	// Asking again keeps the place.
	_, pos := p.Admit(release(initialLimit + 1))
	g.Expect(pos.Ahead).To(Equal(1))
	// A holder is admitted again.
	ok, _ := p.Admit(release(0))
	g.Expect(ok).To(BeTrue())

	// A freed slot is the first queued release's turn; a newcomer waits
	// behind the queue even though a slot is free.
	p.Release(release(0))
	g.Expect(*turns).To(Equal([]types.NamespacedName{release(initialLimit)}))
	ok, _ = p.Admit(release(100))
	g.Expect(ok).To(BeFalse())
	ok, _ = p.Admit(release(initialLimit + 1))
	g.Expect(ok).To(BeFalse(), "the second in the queue went before the first")
	ok, _ = p.Admit(release(initialLimit))
	g.Expect(ok).To(BeTrue())
	g.Expect(p.Stats()).To(Equal(Stats{Rolling: initialLimit, Queued: 3, Limit: initialLimit}))
}

func TestForget_LeavesTheQueueAndFreesTheSlot(t *testing.T) {
	g := NewWithT(t)
	p, turns, _ := newTestPacer(Options{Max: 2})
	for i := range 4 {
		p.Admit(release(i))
	}
	p.Forget(release(2)) // queued: leaves the queue, no turn given
	g.Expect(*turns).To(BeEmpty())
	p.Forget(release(0)) // holding: frees a slot for release 3
	g.Expect(*turns).To(Equal([]types.NamespacedName{release(3)}))
	g.Expect(p.Stats()).To(Equal(Stats{Rolling: 1, Queued: 1, Limit: 2}))
}

func TestAdmit_ATurnNotTakenExpires(t *testing.T) {
	g := NewWithT(t)
	p, turns, clock := newTestPacer(Options{Max: 1})
	for i := range 3 {
		p.Admit(release(i))
	}
	p.Release(release(0))
	g.Expect(*turns).To(Equal([]types.NamespacedName{release(1)}))
	// release 1 never comes back: after turnExpiry release 2 may go.
	ok, _ := p.Admit(release(2))
	g.Expect(ok).To(BeFalse())
	clock.now = clock.now.Add(turnExpiry + time.Second)
	ok, _ = p.Admit(release(2))
	g.Expect(ok).To(BeTrue())
	g.Expect(*turns).To(Equal([]types.NamespacedName{release(1), release(2)}), "the expired turn passed to the next")
	_, pos := p.Admit(release(1))
	g.Expect(pos.Ahead).To(Equal(0), "release 1 went to the end of the queue, not out of it")
}

func TestObserve_GrowsWhileRolloutsDoNotQueue_ShrinksWhenTheyDo(t *testing.T) {
	g := NewWithT(t)
	p, _, clock := newTestPacer(Options{Min: 4, Max: 40})
	for range 100 {
		p.Observe(2*time.Second, 5*time.Minute)
	}
	g.Expect(p.Stats().Limit).To(Equal(40), "capped by Max")

	// 3 × 2 s + 5 s = 11 s: a 12 s rollout queued.
	clock.now = clock.now.Add(time.Minute)
	p.Observe(12*time.Second, 5*time.Minute)
	g.Expect(p.Stats().Limit).To(Equal(30))
	// At most once per baseline: a second one right after changes nothing.
	p.Observe(12*time.Second, 5*time.Minute)
	g.Expect(p.Stats().Limit).To(Equal(30))
	for range 20 {
		clock.now = clock.now.Add(3 * time.Second)
		p.Observe(12*time.Second, 5*time.Minute)
	}
	g.Expect(p.Stats().Limit).To(Equal(4), "floored at Min")

	// A third of the timeout is queueing whatever the baseline.
	p2, _, _ := newTestPacer(Options{})
	p2.Observe(11*time.Second, 30*time.Second)
	g.Expect(p2.Stats().Limit).To(Equal(12))
}

func TestObserve_GivesTheNewSlotsTurns(t *testing.T) {
	g := NewWithT(t)
	p, turns, _ := newTestPacer(Options{Max: 20})
	for i := range initialLimit + 2 {
		p.Admit(release(i))
	}
	g.Expect(*turns).To(BeEmpty())
	p.Observe(time.Second, 0)
	g.Expect(*turns).To(Equal([]types.NamespacedName{release(initialLimit)}), "the limit grew by one: the first queued release's turn")
}

func TestObserve_AWaveDoesNotMakeQueueingTheNorm_ASlowerClusterIsLearnt(t *testing.T) {
	g := NewWithT(t)
	p, _, clock := newTestPacer(Options{Min: 4, Max: 500})
	p.Observe(2*time.Second, 5*time.Minute)
	// Every rollout of a 500-release wave queues behind the others.
	observe := func(n int) {
		for range n {
			clock.now = clock.now.Add(30 * time.Second)
			p.Observe(20*time.Second, 5*time.Minute)
		}
	}
	observe(500)
	g.Expect(p.Stats().Limit).To(Equal(4), "the fastest rollout seen is still the measure")
	// Thousands of rollouts later 20 s is what this cluster takes.
	observe(5000)
	g.Expect(p.Stats().Limit).To(BeNumerically(">", 100))
}

// SlowAfter is the duration past which a rollout counts as queued: unknown
// (zero) before the first rollout, then 3 × the baseline + 5 s.
func TestSlowAfter_FollowsTheBaseline(t *testing.T) {
	g := NewWithT(t)
	p, _, _ := newTestPacer(Options{})
	g.Expect(p.SlowAfter()).To(BeZero())
	p.Observe(10*time.Second, 0)
	g.Expect(p.SlowAfter()).To(Equal(35 * time.Second))
	p.Observe(2*time.Second, 0)
	g.Expect(p.SlowAfter()).To(Equal(11*time.Second), "the fastest rollout sets the baseline")
}

// ExpectedRun is the releases rolling out over the rate rollouts ended at
// lately: 100 rolling while one ends every 250 ms is 25 s; ends older than
// endsMaxAge do not count, so a wave long past leaves no expectation.
func TestExpectedRun_LittlesLawOverTheLatestEnds(t *testing.T) {
	g := NewWithT(t)
	p, _, clock := newTestPacer(Options{Min: 100, Max: 500})
	g.Expect(p.ExpectedRun()).To(BeZero(), "nothing ended yet")
	for i := range 100 {
		p.Admit(release(i))
	}
	for range 3 * endsKept {
		clock.now = clock.now.Add(250 * time.Millisecond)
		p.Observe(time.Second, 0)
	}
	g.Expect(p.Stats().Rolling).To(Equal(100))
	g.Expect(p.ExpectedRun()).To(Equal(25 * time.Second))

	clock.now = clock.now.Add(endsMaxAge)
	g.Expect(p.ExpectedRun()).To(BeZero(), "the ends are older than %v", endsMaxAge)
}

func key(namespace string, i int) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: fmt.Sprintf("%s%d", namespace, i)}
}

// flood has namespace "a" apply 24 releases: the first initialLimit hold
// every slot, the other 8 queue.
func flood(g *WithT, p *Pacer) {
	for i := range 24 {
		ok, _ := p.Admit(key("a", i))
		g.Expect(ok).To(Equal(i < initialLimit), "release a%d", i)
	}
}

func TestRelease_AnotherNamespaceGetsTheNextFreedSlot(t *testing.T) {
	g := NewWithT(t)
	p, turns, _ := newTestPacer(Options{})
	flood(g, p)
	ok, _ := p.Admit(key("b", 0))
	g.Expect(ok).To(BeFalse(), "no slot is free")

	p.Release(key("a", 0))
	g.Expect(*turns).To(Equal([]types.NamespacedName{key("b", 0)}), "b holds none, a all but one: b goes before a's queue")
	ok, _ = p.Admit(key("a", initialLimit))
	g.Expect(ok).To(BeFalse(), "a queued first, but the slot is b's")
	ok, _ = p.Admit(key("b", 0))
	g.Expect(ok).To(BeTrue())
	g.Expect(p.Stats()).To(Equal(Stats{Rolling: initialLimit, Queued: 8, Limit: initialLimit}))
}

func TestAdmit_AnotherNamespaceTakesAFreeSlotAtOnce(t *testing.T) {
	g := NewWithT(t)
	p, turns, _ := newTestPacer(Options{})
	flood(g, p)
	// A slot frees: it is a's first queued release's turn, but that
	// release has not come back yet when b's arrives.
	p.Release(key("a", 0))
	g.Expect(*turns).To(Equal([]types.NamespacedName{key("a", initialLimit)}))
	ok, _ := p.Admit(key("b", 0))
	g.Expect(ok).To(BeTrue(), "b holds nothing: it goes before a's queue")

	ok, pos := p.Admit(key("a", initialLimit))
	g.Expect(ok).To(BeFalse(), "b took the slot")
	g.Expect(pos.Ahead).To(BeZero(), "a's first release is still the first of a's queue")
	// Its turn was withdrawn, so the next freed slot announces it again
	// instead of waiting for the turn to expire.
	p.Release(key("a", 1))
	g.Expect(*turns).To(Equal([]types.NamespacedName{key("a", initialLimit), key("a", initialLimit)}))
	ok, _ = p.Admit(key("a", initialLimit))
	g.Expect(ok).To(BeTrue())
}

// Within a namespace releases go in arrival order; across namespaces the
// one holding the fewest slots goes first, the earliest arrival among
// equals.
func TestRelease_RoundRobinAcrossNamespaces_FIFOWithinOne(t *testing.T) {
	g := NewWithT(t)
	p, turns, _ := newTestPacer(Options{Max: 3})
	for i := range 3 {
		p.Admit(key("x", i))
	}
	for _, k := range []types.NamespacedName{key("a", 0), key("a", 1), key("a", 2), key("b", 0), key("b", 1), key("c", 0)} {
		ok, _ := p.Admit(k)
		g.Expect(ok).To(BeFalse())
	}
	// Every run of x ends, then a's first and b's first: each freed slot
	// goes to the release its turn is announced for.
	for _, done := range []types.NamespacedName{key("x", 0), key("x", 1), key("x", 2), key("a", 0), key("b", 0)} {
		p.Release(done)
		next := (*turns)[len(*turns)-1]
		ok, _ := p.Admit(next)
		g.Expect(ok).To(BeTrue(), "%v after %v ended", next, done)
	}
	g.Expect(*turns).To(Equal([]types.NamespacedName{key("a", 0), key("b", 0), key("c", 0), key("a", 1), key("b", 1)}))
	ok, _ := p.Admit(key("a", 2))
	g.Expect(ok).To(BeFalse(), "every slot is taken")

	// Within a namespace a later release asking first still waits.
	p.Admit(key("a", 3))
	p.Release(key("c", 0))
	g.Expect((*turns)[len(*turns)-1]).To(Equal(key("a", 2)))
	ok, _ = p.Admit(key("a", 3))
	g.Expect(ok).To(BeFalse(), "a3 went before a2")

	for _, k := range []types.NamespacedName{key("a", 1), key("b", 1), key("a", 2), key("a", 3)} {
		p.Forget(k)
	}
	g.Expect(p.slots.spaces).To(BeEmpty(), "no namespace holding or waiting is kept")
	g.Expect(p.slots.waiting).To(BeEmpty())
}

// The position a queued release is told counts only the releases that go
// before it: a newcomer namespace is not behind a flood.
func TestAdmit_PositionCountsOnlyTheReleasesThatGoFirst(t *testing.T) {
	g := NewWithT(t)
	p, _, _ := newTestPacer(Options{})
	flood(g, p)
	position := func(k types.NamespacedName) Position {
		_, pos := p.Admit(k)
		return pos
	}
	g.Expect(position(key("b", 0))).To(Equal(Position{Ahead: 0, Rolling: initialLimit, Limit: initialLimit}))
	g.Expect(position(key("b", 1)).Ahead).To(Equal(1), "b0")
	g.Expect(position(key("c", 0)).Ahead).To(Equal(1), "b0: as many slots, earlier")
	g.Expect(position(key("b", 0)).Ahead).To(BeZero(), "asking again keeps the place")
	g.Expect(position(key("a", initialLimit)).Ahead).To(Equal(3), "b0, b1 and c0: a holds every slot")
	g.Expect(position(key("a", 23)).Ahead).To(Equal(10), "b0, b1, c0 and a's 7 before it")
	g.Expect(position(key("a", 24)).Ahead).To(Equal(11))
}
