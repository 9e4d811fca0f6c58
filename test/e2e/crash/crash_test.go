package crash_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestCrash_KilledDuringUpgrade_RecoversInPlace: the operator is SIGKILLed
// while Helm waits for an upgrade's pods, which leaves the newest revision
// pending-upgrade in storage and the new Deployment spec applied. A new
// operator process unlocks the release and completes the upgrade on the
// objects that are there: the Deployment is the same object, not reinstalled.
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

	// The interrupted upgrade is retried as it was: no rollback first, which
	// would have rolled the workload back to "one" and forward again.
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "superseded", 2: "failed", 3: "deployed"}))
	g.Expect(hr.Status.History).NotTo(BeEmpty())
	g.Expect(hr.Status.History[0].Version).To(Equal(3))
	g.Expect(hr.Status.History[0].Status).To(Equal("deployed"))
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil(), "nothing failed, yet the release was remediated")

	g.Expect(configMapData(g, ns)).To(HaveKeyWithValue("message", "two"))
	d := deployment(g, ns)
	g.Expect(d.UID).To(Equal(uid), "the Deployment was recreated")
	g.Expect(d.Spec.Template.Spec.NodeSelector).To(HaveKey(string(gated)))
	expectRolledOut(g, d)
	expectRecoveryEvents(t, ns, 2, "pending-upgrade",
		ContainElements(kraanv1.ReasonUnlocked, kraanv1.ReasonUpgradeSucceeded),
		Not(ContainElement(BeElementOf(kraanv1.ReasonRollbackSucceeded, kraanv1.ReasonUninstallSucceeded))))
}

// TestCrash_KilledDuringInstall_RecoversToReady: the operator is SIGKILLed
// while Helm waits for a first install's pods, which leaves revision 1
// pending-install. A new operator process unlocks it and completes the
// install in place with an upgrade, as Flux does: the objects the install
// created are kept, not uninstalled and created again.
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

	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "superseded", 2: "deployed"}))
	g.Expect(hr.Status.History).NotTo(BeEmpty())
	g.Expect(hr.Status.History[0].Version).To(Equal(2))
	g.Expect(hr.Status.History[0].Status).To(Equal("deployed"))
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil(), "nothing failed, yet the release was remediated")

	g.Expect(configMapData(g, ns)).To(HaveKeyWithValue("message", "one"))
	d := deployment(g, ns)
	g.Expect(d.UID).To(Equal(uid), "the Deployment of the interrupted install was deleted and created again")
	expectRolledOut(g, d)
	expectRecoveryEvents(t, ns, 1, "pending-install",
		ContainElements(kraanv1.ReasonUnlocked, kraanv1.ReasonUpgradeSucceeded),
		Not(ContainElement(BeElementOf(kraanv1.ReasonUninstallSucceeded, kraanv1.ReasonInstallSucceeded))))
}

// expectRecoveryEvents waits until the HelmRelease app's event reasons satisfy
// every matcher and checks what they tell about the recovery: one Unlocked
// event naming the revision the kill left pending and its status, and no
// Warning, since no Helm action of the recovery failed (a release left
// locked fails every action with "another operation is in progress").
func expectRecoveryEvents(t *testing.T, ns string, revision int, status string, reasons ...types.GomegaMatcher) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		events := releaseEvents(g, ns)
		seen, unlocked := make([]string, 0, len(events)), []string(nil)
		for _, e := range events {
			g.Expect(e.Type).To(Equal(corev1.EventTypeNormal), "%s: %s", e.Reason, e.Message)
			seen = append(seen, e.Reason)
			if e.Reason == kraanv1.ReasonUnlocked {
				unlocked = append(unlocked, e.Message)
			}
		}
		g.Expect(unlocked).To(ConsistOf(And(
			ContainSubstring("revision %d", revision), ContainSubstring(status))))
		g.Expect(seen).To(And(reasons...))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
