package helmreleases_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func realisticValues(preUpgradeFails, testFails bool) map[string]any {
	return map[string]any{
		"hooks": map[string]any{"preUpgrade": map[string]any{"fail": preUpgradeFails}},
		"test":  map[string]any{"fail": testFails},
	}
}

// TestHelmRelease_FailedUpgradeRollsBackStallsAndRecovers: a pre-upgrade hook
// that fails makes the upgrade fail; it is rolled back and retried once, then
// the release is Stalled with the hook's failure in the message while the
// deployed workload stays; fixing the values recovers it.
func TestHelmRelease_FailedUpgradeRollsBackStallsAndRecovers(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "rt", "realistic", withValues(realisticValues(false, false)), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Upgrade = &kraanv1.Upgrade{Remediation: &kraanv1.UpgradeRemediation{Retries: 1}}
	})
	readyAt(t, ns, "rt")
	uid := deployment(g, ns, "rt-realistic").UID

	update(t, ns, "rt", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(realisticValues(true, false)) })
	var stalled *kraanv1.HelmRelease
	g.Eventually(func(g Gomega) {
		stalled = get(g, ns, "rt")
		cond := condition(stalled, kraanv1.StalledCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(2 * timeout).WithPolling(interval).Should(Succeed())

	g.Expect(condition(stalled, kraanv1.StalledCondition).Reason).To(Equal(kraanv1.ReasonRetriesExceeded))
	g.Expect(condition(stalled, kraanv1.StalledCondition).Message).To(ContainSubstring("pre-upgrade hooks failed"))
	g.Expect(condition(stalled, kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(condition(stalled, kraanv1.RemediatedCondition).Reason).To(Equal(kraanv1.ReasonRollbackSucceeded))
	g.Expect(stalled.Status.UpgradeFailures).To(Equal(int64(2)), "one try and one retry")
	g.Expect(stalled.Status.History[0].Status).To(Equal("deployed"), "rolled back to a deployed revision")
	g.Expect(stalled.Status.History[0].Action).To(Equal(kraanv1.ReleaseActionRollback), "the rollback made the deployed revision")
	g.Expect(stalled.Status.Inventory.Entries).To(ContainElement(
		kraanv1.ResourceRef{ID: ns + "_rt-realistic_apps_Deployment", Version: "v1"}), "what the rollback applied")
	g.Expect(deployment(g, ns, "rt-realistic").UID).To(Equal(uid), "the deployed workload was kept")

	// Fixing the spec clears Stalled and upgrades.
	update(t, ns, "rt", func(hr *kraanv1.HelmRelease) {
		hr.Spec.Values = toJSON(map[string]any{"replicaCount": 2})
	})
	hr := readyAt(t, ns, "rt")
	g.Expect(condition(hr, kraanv1.StalledCondition)).To(BeNil())
	g.Expect(hr.Status.UpgradeFailures).To(BeZero())
	g.Expect(deployment(g, ns, "rt-realistic").Status.ReadyReplicas).To(Equal(int32(2)))
}

// TestHelmRelease_FailedTestHook honours test.ignoreFailures: ignored, the
// release is Ready with TestSuccess False; not ignored, it stalls after the
// install's zero retries without uninstalling what is deployed.
func TestHelmRelease_FailedTestHook(t *testing.T) {
	for _, ignore := range []bool{true, false} {
		t.Run(map[bool]string{true: "ignored", false: "not ignored"}[ignore], func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			newRepository(t, ns)
			newRelease(t, ns, "tested", "realistic", withValues(realisticValues(false, true)), func(hr *kraanv1.HelmRelease) {
				hr.Spec.Test = &kraanv1.Test{Enable: true, IgnoreFailures: ignore}
			})
			g.Eventually(func(g Gomega) {
				hr := get(g, ns, "tested")
				test := condition(hr, kraanv1.TestSuccessCondition)
				g.Expect(test).NotTo(BeNil())
				g.Expect(test.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
				ready := condition(hr, kraanv1.ReadyCondition)
				if ignore {
					g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
					return
				}
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(condition(hr, kraanv1.StalledCondition)).NotTo(BeNil())
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			g.Expect(helmRevisions(g, ns, "tested")).To(ConsistOf("1=deployed"), "the release stays installed")
		})
	}
}

// TestHelmRelease_ImpersonationWithoutRights names what the service account
// may not do.
func TestHelmRelease_ImpersonationWithoutRights(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns}}
	g.Expect(k8s.Create(context.Background(), sa)).To(Succeed())
	newRelease(t, ns, "denied", "small", func(hr *kraanv1.HelmRelease) { hr.Spec.ServiceAccountName = "tenant" })
	g.Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "denied"), kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(kraanv1.ReasonAccessDenied))
		g.Expect(containsAll(ready.Message, "system:serviceaccount:"+ns+":tenant", "cannot", "secrets")).
			To(BeTrue(), ready.Message)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
