package helmrelease

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// queuedRecheck is how often a release waiting in the rollout queue is
// looked at again besides its turn, which re-queues it: a safety net.
const queuedRecheck = 10 * time.Minute

// admitRollout gives the release a rollout slot, or queues it: a Helm action
// starts only with a slot, so its timeout measures its own rollout, never
// the backlog of a wave of releases (internal/pace). A queued release is
// Reconciling with reason RolloutQueued; its turn re-queues it.
func (r *Reconciler) admitRollout(sc *releaseScope) error {
	key := ctrlKey(sc.hr)
	admitted, at := r.pacer.Admit(key)
	r.Metrics.setRollouts(r.pacer.Stats())
	if admitted {
		return nil
	}
	sc.queued = true
	return kit.Waiting(kraanv1.ReasonRolloutQueued, queuedRecheck, fmt.Errorf(
		"waiting for a rollout slot: %d releases ahead in the queue, %d rolling out (at most %d at once, adapted to how fast the cluster rolls out; --max-concurrent-rollouts caps it)",
		at.Ahead, at.Rolling, at.Limit))
}

// forgetRollout frees the release's slot and place in the queue: it has
// nothing to roll out now.
func (r *Reconciler) forgetRollout(key types.NamespacedName) {
	r.pacer.Forget(key)
	r.Metrics.setRollouts(r.pacer.Stats())
}

// observeRun takes how long a run took, from its start to its end, into
// the pacing.
func (r *Reconciler) observeRun(took, timeout time.Duration) {
	r.pacer.Observe(took, timeout)
	r.Metrics.setRollouts(r.pacer.Stats())
}
