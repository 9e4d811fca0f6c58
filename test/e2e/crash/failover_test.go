package crash_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// TestCrash_LeaderKilledMidUpgrade_StandbyFinishesIt: two replicas run with
// --leader-elect, as a Deployment of two would; the leader is SIGKILLed
// while Helm waits for an upgrade's pods. The standby, ready all along, takes
// the Lease once it expires and resumes the upgrade's wait: no new revision,
// no rollback, and the same Deployment.
func TestCrash_LeaderKilledMidUpgrade_StandbyFinishesIt(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	gated := newGate(ns)

	// The first replica leads before the second starts: which of two
	// processes holds the Lease cannot be read from the Lease itself.
	leader := startOperator(t, "leader")
	var leaderID string
	g.Eventually(func(g Gomega) { leaderID = leaseHolder(g) }).
		WithTimeout(suite.OperatorStartTimeout).WithPolling(interval).Should(Succeed())
	standby := startOperator(t, "standby")
	transitions := leaseTransitions(g)

	newRelease(t, ns, map[string]any{"message": "one"})
	readyAt(t, ns)
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "deployed"}))
	g.Expect(leaseHolder(g)).To(Equal(leaderID), "the standby took the Lease from a live leader")
	uid := deployment(g, ns).UID

	setValues(t, ns, map[string]any{"message": "two", "nodeSelector": gated.nodeSelector()})
	killed := killMidOperation(t, leader, ns, gated, 2, "pending-upgrade")
	g.Expect(standby.Ready(t.Context())).To(BeTrue(), "the standby is not ready, so it could not take over at once")
	gated.open(t)

	g.Eventually(func(g Gomega) {
		g.Expect(leaseHolder(g)).NotTo(Equal(killed.holder))
	}).WithTimeout(suite.OperatorStartTimeout).WithPolling(interval).Should(Succeed())
	t.Logf("The standby leads %v after the kill", time.Since(killed.at).Round(time.Millisecond))
	g.Expect(leaseTransitions(g)).To(Equal(transitions+1), "the Lease changed hands other than once")
	hr := readyAt(t, ns)
	t.Logf("Ready at generation %d %v after the kill", hr.Generation, time.Since(killed.at).Round(time.Millisecond))

	// Revision 2 is the upgrade the kill interrupted, whose wait the standby
	// resumed and finished. Anything more is a duplicate.
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "superseded", 2: "deployed"}))
	g.Expect(hr.Status.History).NotTo(BeEmpty())
	g.Expect(hr.Status.History[0].Version).To(Equal(2))
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil(), "nothing failed, yet the release was remediated")
	g.Expect(configMapData(g, ns)).To(HaveKeyWithValue("message", "two"))
	d := deployment(g, ns)
	g.Expect(d.UID).To(Equal(uid), "the Deployment was recreated")
	expectRolledOut(g, d)
	g.Expect(standby.State()).To(BeNil(), "the standby exited: nothing was left to finish the upgrade")
	expectResumedEvents(t, ns, 2, kraanv1.ReasonUpgradeSucceeded)
}

// leaseTransitions is how many times the operator's Lease changed hands.
func leaseTransitions(g Gomega) int32 {
	lease := &coordinationv1.Lease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: leaseNamespace, Name: suite.LeaseName}, lease)).To(Succeed())
	if lease.Spec.LeaseTransitions == nil {
		return 0
	}
	return *lease.Spec.LeaseTransitions
}
