package crash_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestCrash_KilledDuringUpgrade_RecoversInPlace: the operator is SIGKILLed
// while Helm waits for an upgrade's pods, which leaves the newest revision
// pending-upgrade in storage and the new Deployment spec applied. A new
// operator process resumes the wait on the objects that are there and
// finishes the revision as Helm would have: no new revision, no rollback,
// the Deployment the same object.
func TestCrash_KilledDuringUpgrade_RecoversInPlace(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	gated := newGate(ns)
	first := startOperator(t, "first")

	newRelease(t, ns, map[string]any{"message": "one"})
	readyAt(t, ns)
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "deployed"}))
	uid := deployment(g, ns).UID

	setValues(t, ns, map[string]any{"message": "two", "nodeSelector": gated.nodeSelector()})
	killed := killMidOperation(t, first, ns, gated, 2, "pending-upgrade")
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "deployed", 2: "pending-upgrade"}),
		"the kill did not interrupt the upgrade")

	hr := recoverAfter(t, ns, gated, killed)

	// The interrupted upgrade is finished, not retried: no rollback, which
	// would have rolled the workload back to "one" and forward again, and no
	// new revision.
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "superseded", 2: "deployed"}))
	g.Expect(hr.Status.History).NotTo(BeEmpty())
	g.Expect(hr.Status.History[0].Version).To(Equal(2))
	g.Expect(hr.Status.History[0].Status).To(Equal("deployed"))
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil(), "nothing failed, yet the release was remediated")

	g.Expect(configMapData(g, ns)).To(HaveKeyWithValue("message", "two"))
	d := deployment(g, ns)
	g.Expect(d.UID).To(Equal(uid), "the Deployment was recreated")
	g.Expect(d.Spec.Template.Spec.NodeSelector).To(HaveKey(string(gated)))
	expectRolledOut(g, d)
	expectResumedEvents(t, ns, 2, kraanv1.ReasonUpgradeSucceeded)
}

// TestCrash_KilledDuringInstall_RecoversToReady: the operator is SIGKILLed
// while Helm waits for a first install's pods, which leaves revision 1
// pending-install. A new operator process resumes the wait and finishes the
// install: revision 1 deployed, the objects the install created kept, not
// uninstalled and created again.
func TestCrash_KilledDuringInstall_RecoversToReady(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	gated := newGate(ns)
	first := startOperator(t, "first")

	newRelease(t, ns, map[string]any{"message": "one", "nodeSelector": gated.nodeSelector()})
	killed := killMidOperation(t, first, ns, gated, 1, "pending-install")
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "pending-install"}),
		"the kill did not interrupt the install")
	uid := deployment(g, ns).UID

	hr := recoverAfter(t, ns, gated, killed)

	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "deployed"}))
	g.Expect(hr.Status.History).NotTo(BeEmpty())
	g.Expect(hr.Status.History[0].Version).To(Equal(1))
	g.Expect(hr.Status.History[0].Status).To(Equal("deployed"))
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil(), "nothing failed, yet the release was remediated")

	g.Expect(configMapData(g, ns)).To(HaveKeyWithValue("message", "one"))
	d := deployment(g, ns)
	g.Expect(d.UID).To(Equal(uid), "the Deployment of the interrupted install was deleted and created again")
	expectRolledOut(g, d)
	expectResumedEvents(t, ns, 1, kraanv1.ReasonInstallSucceeded)
}

// expectResumedEvents waits for the event of the resumed action, reason,
// naming the revision, and checks that every event of the release is Normal
// and none is of an unlock or a remediation: nothing was retried or undone.
func expectResumedEvents(t *testing.T, ns string, revision int, reason string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var resumed []string
		for _, e := range releaseEvents(g, ns) {
			g.Expect(e.Type).To(Equal(corev1.EventTypeNormal), "%s: %s", e.Reason, e.Message)
			g.Expect(e.Reason).NotTo(BeElementOf(kraanv1.ReasonUnlocked, kraanv1.ReasonRollbackSucceeded, kraanv1.ReasonUninstallSucceeded))
			if e.Reason == reason && strings.Contains(e.Message, "resumed the wait") {
				resumed = append(resumed, e.Message)
			}
		}
		g.Expect(resumed).To(ConsistOf(ContainSubstring("revision %d", revision)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
