// Package pace bounds how many releases roll out at once by what the cluster
// delivers.
//
// A release's Helm action starts only once it holds a rollout slot, so the
// timeout of its wait measures its own rollout, never a backlog in front of
// it. Without pacing every release of a wave (3000 HelmReleases applied at
// once) starts together, every wait's clock runs while the cluster's own
// controllers work through one shared backlog, and the releases at the end
// of it time out through no fault of their own.
//
// The number of slots adapts, additive increase and multiplicative decrease
// as TCP congestion control does: every rollout that ends without having
// queued adds a slot; one that took much longer than the fastest rollout
// seen (or a good part of its timeout) means something on its way
// queues — the operator's own workers or the cluster's controllers — and the
// limit shrinks by a quarter, at most once per rollout time. The
// cluster's throughput is unchanged by the bound — a backlog does not roll
// out faster — while each wait stays short and the operator's memory holds
// a bounded number of runs.
//
// The slots are shared fairly between namespaces, a tenant's unit: the next
// slot goes to the namespace that holds the fewest, so one tenant's wave
// delays its own releases, not the others' (fair.go).
package pace

import (
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Options are a Pacer's settings.
type Options struct {
	// Max caps the limit (--max-concurrent-rollouts); 0 means DefaultMax.
	Max int
	// Min is the floor the limit never shrinks below; 0 means DefaultMin
	// (or Max, when Max is smaller).
	Min int
	// OnTurn is called, outside the Pacer's lock, for each queued release
	// whose turn has come: it must reconcile it, which then calls Admit.
	OnTurn func(types.NamespacedName)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Defaults of Options.
const (
	// DefaultMax caps the releases rolling out at once: far more than a
	// cluster's controllers work on at a time, a bound on the operator's
	// memory while they do.
	DefaultMax = 500
	// DefaultMin is the smallest limit: enough to keep a slow cluster's
	// controllers busy.
	DefaultMin = 4
	// initialLimit is where the limit starts; it grows by one per rollout
	// that did not queue.
	initialLimit = 16
	// baselineDrift is how far the baseline (the fastest rollout) moves
	// towards a slower one per rollout: slowly enough that a wave, whose
	// rollouts all queue, does not make queueing the norm (five thousand
	// rollouts move it two thirds of the way), fast enough that a cluster
	// that became slower for good is learnt.
	baselineDrift = 0.0002
	// queuedFactor and queuedSlack: a rollout queued when it took longer
	// than queuedFactor × baseline + queuedSlack.
	queuedFactor = 3
	queuedSlack  = 5 * time.Second
	// timeoutShare: a rollout that used more than this share of its
	// timeout queued, whatever the baseline says.
	timeoutShare = 3
	// endsKept is how many of the latest rollout ends the rate the
	// cluster delivers at is measured over, endsMaxAge how old one may be
	// to count: an hour-old wave says nothing about the cluster now.
	endsKept   = 64
	endsMaxAge = 10 * time.Minute
	// turnExpiry is how long a release whose turn came keeps its place
	// before the ones behind it may go first: its reconcile may have found
	// nothing to do and never come back.
	turnExpiry = 30 * time.Second
)

// Pacer hands out rollout slots, fairly between namespaces and in arrival
// order within one. Its methods are safe for concurrent use.
type Pacer struct {
	mu    sync.Mutex
	opts  Options
	limit float64
	slots slots
	// turns are the turns given, oldest first, so that finding the expired
	// ones looks at those alone, not the whole queue on every Admit. A turn
	// taken, withdrawn or given again leaves its entry behind, skipped
	// when it comes first.
	turns []turn
	// baseline is the fastest rollout seen, drifting slowly towards
	// slower ones (baselineDrift); zero before the first.
	baseline     time.Duration
	lastDecrease time.Time
	// ends are the moments the latest rollouts ended, oldest first (at
	// most endsKept).
	ends []time.Time
}

// turn is a turn given to a queued release at a moment.
type turn struct {
	ticket *ticket
	at     time.Time
}

// New returns a Pacer with opts.
func New(opts Options) *Pacer {
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.Min <= 0 {
		opts.Min = DefaultMin
	}
	opts.Min = min(opts.Min, opts.Max)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.OnTurn == nil {
		opts.OnTurn = func(types.NamespacedName) {}
	}
	return &Pacer{opts: opts, limit: float64(min(max(initialLimit, opts.Min), opts.Max)), slots: newSlots()}
}

// Position is where a release that was not admitted stands.
type Position struct {
	// Ahead is the number of queued releases that go before it in the fair
	// order: the next slots are theirs.
	Ahead int
	// Rolling is the number of releases rolling out now; Limit how many may.
	Rolling, Limit int
}

// Admit gives key a slot when one is free and no queued release that goes
// before it in the fair order waits for one; otherwise it queues key
// (keeping its place if queued already) and says where it stands. A release
// holding a slot is admitted again: it may run again before releasing it.
func (p *Pacer) Admit(key types.NamespacedName) (bool, Position) {
	p.mu.Lock()
	admitted, at, turns := p.admit(key)
	p.mu.Unlock()
	p.announce(turns)
	return admitted, at
}

// admit is Admit under the lock; it also returns the turns that expired
// turns passed on to the releases behind.
func (p *Pacer) admit(key types.NamespacedName) (bool, Position, []types.NamespacedName) {
	if _, ok := p.slots.holding[key]; ok {
		return true, Position{}, nil
	}
	var turns []types.NamespacedName
	if p.dropExpiredTurns() {
		turns = p.giveTurns()
	}
	t := p.slots.queued[key]
	var ahead int
	if t != nil {
		ahead = p.slots.ahead(t)
	} else {
		ahead = p.slots.aheadOfNew(key.Namespace)
	}
	if ahead < int(p.limit)-p.slots.held() {
		if t != nil {
			p.slots.dequeue(t)
		}
		p.slots.take(key)
		return true, Position{}, turns
	}
	if t == nil {
		p.slots.enqueue(key)
	} else {
		// Its turn came, but a release that goes before it took the slot
		// since (a newcomer of a namespace holding fewer, or the limit
		// shrank): it waits again, and its next turn is announced anew
		// instead of being withheld until this one expires.
		t.turnAt = time.Time{}
	}
	return false, Position{Ahead: ahead, Rolling: p.slots.held(), Limit: int(p.limit)}, turns
}

// dropExpiredTurns moves releases whose turn came turnExpiry ago to the end
// of their namespace's queue, where a later turn finds them again; it says
// whether it moved any.
func (p *Pacer) dropExpiredTurns() bool {
	now := p.opts.Now()
	moved := false
	for len(p.turns) > 0 {
		first := p.turns[0]
		t := first.ticket
		current := p.slots.queued[t.key] == t && t.turnAt.Equal(first.at)
		if current && now.Sub(first.at) <= turnExpiry {
			break
		}
		p.turns[0] = turn{}
		p.turns = p.turns[1:]
		if current {
			t.turnAt = time.Time{}
			p.slots.requeue(t)
			moved = true
		}
	}
	return moved
}

// Release frees key's slot (its run ended) and gives the freed turns to the
// releases that go first.
func (p *Pacer) Release(key types.NamespacedName) {
	p.mu.Lock()
	p.slots.free(key)
	turns := p.giveTurns()
	p.mu.Unlock()
	p.announce(turns)
}

// Forget removes key from the queue and frees its slot: it has nothing to
// roll out (in sync, suspended, deleted).
func (p *Pacer) Forget(key types.NamespacedName) {
	p.mu.Lock()
	p.slots.free(key)
	if t, ok := p.slots.queued[key]; ok {
		p.slots.dequeue(t)
	}
	turns := p.giveTurns()
	p.mu.Unlock()
	p.announce(turns)
}

// giveTurns marks the queued releases that the free slots are for and
// returns the ones newly given a turn.
func (p *Pacer) giveTurns() []types.NamespacedName {
	var out []types.NamespacedName
	now := p.opts.Now()
	for _, t := range p.slots.first(int(p.limit) - p.slots.held()) {
		if t.turnAt.IsZero() {
			t.turnAt = now
			p.turns = append(p.turns, turn{ticket: t, at: now})
			out = append(out, t.key)
		}
	}
	return out
}

func (p *Pacer) announce(turns []types.NamespacedName) {
	for _, key := range turns {
		p.opts.OnTurn(key)
	}
}

// Observe takes the duration of one rollout, from its start to its end (and
// its timeout, 0 for none), into the limit: a rollout that did not queue adds a slot, one that
// queued takes a quarter away.
func (p *Pacer) Observe(took, timeout time.Duration) {
	p.mu.Lock()
	if p.baseline == 0 || took < p.baseline {
		p.baseline = took
	} else {
		p.baseline += time.Duration(float64(took-p.baseline) * baselineDrift)
	}
	baseline := p.baseline
	queued := took > queuedFactor*baseline+queuedSlack || timeout > 0 && took > timeout/timeoutShare
	now := p.opts.Now()
	if len(p.ends) == endsKept {
		p.ends = slices.Delete(p.ends, 0, 1)
	}
	p.ends = append(p.ends, now)
	switch {
	case !queued:
		p.limit = min(p.limit+1, float64(p.opts.Max))
	case now.Sub(p.lastDecrease) > max(baseline, time.Second):
		p.limit = max(p.limit*0.75, float64(p.opts.Min))
		p.lastDecrease = now
	}
	turns := p.giveTurns()
	p.mu.Unlock()
	p.announce(turns)
}

// SlowAfter is how long a rollout may take before the pacer counts it as
// queued: queuedFactor × the baseline + queuedSlack, or zero before any
// rollout was observed.
func (p *Pacer) SlowAfter() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.baseline == 0 {
		return 0
	}
	return queuedFactor*p.baseline + queuedSlack
}

// ExpectedRun is how long a rollout that starts now is expected to take
// by Little's law: the releases rolling out divided by the rate at which
// rollouts ended lately (the last endsKept, none older than endsMaxAge).
// In a wave the cluster's controllers work through every rollout in flight
// at their own pace, so a run's length is mostly the others' ahead of it;
// zero when fewer than two rollouts ended lately.
func (p *Pacer) ExpectedRun() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	recent := p.ends[sort.Search(len(p.ends), func(i int) bool { return now.Sub(p.ends[i]) <= endsMaxAge }):]
	if len(recent) < 2 || p.slots.held() == 0 {
		return 0
	}
	span := recent[len(recent)-1].Sub(recent[0])
	if span <= 0 {
		return 0
	}
	// n ends over span: one every span/(n-1); the holders of a slot ahead.
	return span * time.Duration(p.slots.held()) / time.Duration(len(recent)-1)
}

// Stats are what the metrics show.
type Stats struct {
	Rolling, Queued, Limit int
}

// Stats returns the releases rolling out, queued, and the limit now.
func (p *Pacer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Rolling: p.slots.held(), Queued: len(p.slots.queued), Limit: int(p.limit)}
}
