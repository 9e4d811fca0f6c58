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
