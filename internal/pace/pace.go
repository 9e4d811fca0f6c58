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

// Pacer hands out rollout slots in arrival order. Its methods are safe for
// concurrent use.
type Pacer struct {
	mu      sync.Mutex
	opts    Options
	limit   float64
	holding map[types.NamespacedName]struct{}
	queue   []*ticket
	// queued are the keys of queue: every reconcile that starts no run
	// calls Forget, which must not scan the queue for a key not in it.
	queued map[types.NamespacedName]struct{}
	// baseline is the fastest rollout seen, drifting slowly towards
	// slower ones (baselineDrift); zero before the first.
	baseline     time.Duration
	lastDecrease time.Time
	// ends are the moments the latest rollouts ended, oldest first (at
	// most endsKept).
	ends []time.Time
}

// ticket is a queued release and when its turn came (zero: not yet).
type ticket struct {
	key    types.NamespacedName
	turnAt time.Time
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
	return &Pacer{opts: opts, limit: float64(min(max(initialLimit, opts.Min), opts.Max)),
		holding: map[types.NamespacedName]struct{}{}, queued: map[types.NamespacedName]struct{}{}}
}

// Position is where a release that was not admitted stands.
type Position struct {
	// Ahead is the number of releases queued before it.
	Ahead int
	// Rolling is the number of releases rolling out now; Limit how many may.
	Rolling, Limit int
}

// Admit gives key a slot when one is free and no release queued before it
// waits for one; otherwise it queues key (keeping its place if queued
// already) and says where it stands. A release holding a slot is admitted
// again: it may run again before releasing it.
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
	if _, ok := p.holding[key]; ok {
		return true, Position{}, nil
	}
	var turns []types.NamespacedName
	if p.dropExpiredTurns() {
		turns = p.turns()
	}
	free := int(p.limit) - len(p.holding)
	at := -1
	if _, ok := p.queued[key]; ok {
		at = slices.IndexFunc(p.queue, func(t *ticket) bool { return t.key == key })
	}
	if free > 0 && (at >= 0 && at < free || at < 0 && len(p.queue) < free) {
		if at >= 0 {
			p.queue = slices.Delete(p.queue, at, at+1)
			delete(p.queued, key)
		}
		p.holding[key] = struct{}{}
		return true, Position{}, turns
	}
	if at < 0 {
		at = len(p.queue)
		p.queue = append(p.queue, &ticket{key: key})
		p.queued[key] = struct{}{}
	}
	return false, Position{Ahead: at, Rolling: len(p.holding), Limit: int(p.limit)}, turns
}

// dropExpiredTurns moves releases whose turn came turnExpiry ago to the end
// of the queue, where a later turn finds them again; it says whether it
// moved any.
func (p *Pacer) dropExpiredTurns() bool {
	now := p.opts.Now()
	var expired []*ticket
	p.queue = slices.DeleteFunc(p.queue, func(t *ticket) bool {
		if !t.turnAt.IsZero() && now.Sub(t.turnAt) > turnExpiry {
			t.turnAt = time.Time{}
			expired = append(expired, t)
			return true
		}
		return false
	})
	p.queue = append(p.queue, expired...)
	return len(expired) > 0
}

// Release frees key's slot (its run ended) and gives the freed turns to the
// releases queued first.
func (p *Pacer) Release(key types.NamespacedName) {
	p.mu.Lock()
	delete(p.holding, key)
	turns := p.turns()
	p.mu.Unlock()
	p.announce(turns)
}

// Forget removes key from the queue and frees its slot: it has nothing to
// roll out (in sync, suspended, deleted).
func (p *Pacer) Forget(key types.NamespacedName) {
	p.mu.Lock()
	delete(p.holding, key)
	if _, ok := p.queued[key]; ok {
		p.queue = slices.DeleteFunc(p.queue, func(t *ticket) bool { return t.key == key })
		delete(p.queued, key)
	}
	turns := p.turns()
	p.mu.Unlock()
	p.announce(turns)
}

// turns marks the queued releases that the free slots are for and returns
// the ones newly given a turn.
func (p *Pacer) turns() []types.NamespacedName {
	free := int(p.limit) - len(p.holding)
	var out []types.NamespacedName
	now := p.opts.Now()
	for i := 0; i < free && i < len(p.queue); i++ {
		if t := p.queue[i]; t.turnAt.IsZero() {
			t.turnAt = now
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
	turns := p.turns()
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
	if len(recent) < 2 || len(p.holding) == 0 {
		return 0
	}
	span := recent[len(recent)-1].Sub(recent[0])
	if span <= 0 {
		return 0
	}
	// n ends over span: one every span/(n-1); len(holding) of them ahead.
	return span * time.Duration(len(p.holding)) / time.Duration(len(recent)-1)
}

// Stats are what the metrics show.
type Stats struct {
	Rolling, Queued, Limit int
}

// Stats returns the releases rolling out, queued, and the limit now.
func (p *Pacer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Rolling: len(p.holding), Queued: len(p.queue), Limit: int(p.limit)}
}
