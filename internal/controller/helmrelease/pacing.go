package helmrelease

import (
	"errors"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/pace"
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
	admitted, at := r.runs.Admit(key)
	if admitted {
		return nil
	}
	sc.queued = true
	return outcome.Waiting(kraanv1.ReasonRolloutQueued, queuedRecheck, errors.New(queuedMessage(sc.hr, at)))
}

// queuedMessage says where the release joined the rollout queue. A release
// looked at again while still queued (the recheck, a change of a values
// Secret) keeps the message it was given: a new position in it would cost
// a status write per queued release and recheck, thousands in a wave that
// outlasts queuedRecheck. kraan_helmrelease_rollouts shows the queue now.
func queuedMessage(hr *kraanv1.HelmRelease, at pace.Position) string {
	if c := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReconcilingCondition); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == kraanv1.ReasonRolloutQueued && c.ObservedGeneration == hr.Generation {
		return c.Message
	}
	return fmt.Sprintf("waiting for a rollout slot: %d releases were ahead in the queue when it joined, %d rolling out "+
		"(at most %d at once, adapted to how fast the cluster rolls out; --max-concurrent-rollouts caps it)",
		at.Ahead, at.Rolling, at.Limit)
}
