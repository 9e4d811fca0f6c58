package helmrelease

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
