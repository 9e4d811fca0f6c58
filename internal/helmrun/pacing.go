package helmrun

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kraan-io/kraan-operator/internal/pace"
)

// Admit gives key a rollout slot, or a place in the queue: a Helm action
// starts only with a slot, so its timeout measures its own rollout, never
// the backlog of a wave (internal/pace). A queued object's turn re-queues it
// through Ended.
func (rs *Runs[T]) Admit(key types.NamespacedName) (bool, pace.Position) {
	admitted, at := rs.pacer.Admit(key)
	rs.pacingChanged()
	return admitted, at
}

// ForgetRollout frees key's rollout slot and place in the queue: it has
// nothing to roll out now.
func (rs *Runs[T]) ForgetRollout(key types.NamespacedName) {
	rs.pacer.Forget(key)
	rs.pacingChanged()
}

// observe takes how long a run took, from its start to its end, and its
// timeout into the pacing: the queues a run meets on the way (the slots
// here, the cluster's controllers) all make it longer.
func (rs *Runs[T]) observe(took, timeout time.Duration) {
	rs.pacer.Observe(took, timeout)
	rs.pacingChanged()
}

// Pacing is the rollout pacing's numbers now.
func (rs *Runs[T]) Pacing() pace.Stats { return rs.pacer.Stats() }

func (rs *Runs[T]) pacingChanged() {
	if rs.onPacing != nil {
		rs.onPacing(rs.pacer.Stats())
	}
}

// MinProgressDelay is how long an action runs at least before its progress
// is written on the object: a quick action is reported once, when it ends,
// which saves a status write per release; a long one shows what it does
// while it runs. A release that waited in the rollout queue (one status
// write) then costs no more writes than one that did not.
const MinProgressDelay = 30 * time.Second

// progressSlack is added to twice the expected run: the spread of a few
// seconds that a small wave's runs have however they are paced.
const progressSlack = 5 * time.Second

// ProgressDelay is how long an action of a release with the given timeout
// runs before its progress is written: MinProgressDelay, or longer when the
// pacing expects this rollout to take longer — the time after which it
// counts one as queued (3 × the fastest + 5 s), or twice what the rollouts
// in flight take at the rate the cluster delivers them (Little's law) + 5 s
// — but never more than half the timeout, by when it is news whatever the
// wave. In a wave of thousands a rollout of a minute is the norm, not news:
// the 10,000 run of 2026-12-04 wrote "Running install" for 2605 of its
// releases, most late in the wave, when 250 to 480 rolled out at once on a
// cluster that finished 4 a second.
func (rs *Runs[T]) ProgressDelay(timeout time.Duration) time.Duration {
	return progressDelay(rs.pacer, timeout)
}

func progressDelay(pacer *pace.Pacer, timeout time.Duration) time.Duration {
	if pacer == nil {
		return MinProgressDelay
	}
	delay := max(MinProgressDelay, pacer.SlowAfter(), 2*pacer.ExpectedRun()+progressSlack)
	if timeout > 0 {
		delay = min(delay, max(MinProgressDelay, timeout/2))
	}
	return delay
}
