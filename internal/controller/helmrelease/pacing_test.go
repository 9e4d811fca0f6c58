package helmrelease

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/pace"
)

// A release looked at again while still queued keeps its message, so its
// status, unchanged, is not written again; a new generation, or a release
// not queued before, gets its position.
func TestQueuedMessage_StableWhileQueued(t *testing.T) {
	g := NewWithT(t)
	hr := &kraanv1.HelmRelease{}
	hr.Generation = 2
	first := queuedMessage(hr, pace.Position{Ahead: 2500, Rolling: 120, Limit: 130})
	g.Expect(first).To(ContainSubstring("2500 releases were ahead in the queue when it joined, 120 rolling out (at most 130 at once"))

	hr.Status.Conditions = []metav1.Condition{{Type: kraanv1.ReconcilingCondition, Status: metav1.ConditionTrue,
		Reason: kraanv1.ReasonRolloutQueued, Message: first, ObservedGeneration: 2}}
	g.Expect(queuedMessage(hr, pace.Position{Ahead: 40, Rolling: 130, Limit: 131})).To(Equal(first))

	hr.Generation = 3
	g.Expect(queuedMessage(hr, pace.Position{Ahead: 40, Rolling: 130, Limit: 131})).To(ContainSubstring("40 releases were ahead"))
	hr.Generation = 2
	hr.Status.Conditions[0].Reason = kraanv1.ReasonProgressing
	g.Expect(queuedMessage(hr, pace.Position{Ahead: 7, Rolling: 1, Limit: 16})).To(ContainSubstring("7 releases were ahead"))
}

// TestEnqueueAhead_TurnsAndEndsGoBeforeAWaveOfNewReleases: in the
// controller's own priority queue, behind a thousand new releases, a turn in
// the rollout queue (or the end of a run, which gives its slot back) is the
// next reconcile; with the default priority it came after all of them.
func TestEnqueueAhead_TurnsAndEndsGoBeforeAWaveOfNewReleases(t *testing.T) {
	g := NewWithT(t)
	q := priorityqueue.New[reconcile.Request]("helmrelease-test")
	t.Cleanup(q.ShutDown)
	for i := range 1000 {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "wave", Name: fmt.Sprintf("r%d", i)}})
	}
	turn := &kraanv1.HelmRelease{}
	turn.Namespace, turn.Name = "wave", "r500"
	enqueueAhead.Generic(context.Background(), event.GenericEvent{Object: turn}, q)
	ended := &kraanv1.HelmRelease{}
	ended.Namespace, ended.Name = "other", "ended"
	enqueueAhead.Generic(context.Background(), event.GenericEvent{Object: ended}, q)
	g.Eventually(q.Len).Should(Equal(1001)) // r500 was queued already: one item, its priority raised

	first := make([]string, 0, 2)
	for range 2 {
		req, priority, _ := q.GetWithPriority()
		g.Expect(priority).To(Equal(runPriority))
		first = append(first, req.String())
		q.Done(req)
	}
	g.Expect(first).To(ConsistOf("wave/r500", "other/ended"))
	req, priority, _ := q.GetWithPriority()
	g.Expect(req.String()).To(Equal("wave/r0"))
	g.Expect(priority).To(BeZero())
}
