package helmreleases_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestRollout_WaitsHoldNoWorker: more releases wait for their pods than the
// operator has workers (4), and a release created after them still installs
// and turns Ready while they all wait: Helm's waits hold no worker. With a
// worker per wait, it would have waited for one of them to end.
func TestRollout_WaitsHoldNoWorker(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	label := "e2e.kraan.io/" + ns
	const waiting = 6
	for i := range waiting {
		newRelease(t, ns, fmt.Sprintf("gated-%d", i), "small", withVersion("0.1.0"),
			withValues(map[string]any{"nodeSelector": map[string]any{label: "go"}}))
	}
	g.Eventually(func(g Gomega) {
		for i := range waiting {
			g.Expect(helmRevisions(g, ns, fmt.Sprintf("gated-%d", i))).To(ConsistOf("1=pending-install"))
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "every gated release waits for its pods")

	newRelease(t, ns, "free", "small", withVersion("0.1.0"))
	readyAt(t, ns, "free")
	for i := range waiting {
		g.Expect(helmRevisions(g, ns, fmt.Sprintf("gated-%d", i))).To(ConsistOf("1=pending-install"), "still waiting")
	}

	labelNodes(t, label, "go")
	for i := range waiting {
		hr := readyAt(t, ns, fmt.Sprintf("gated-%d", i))
		g.Expect(condition(hr, kraanv1.ReleasedCondition).Reason).To(Equal(kraanv1.ReasonInstallSucceeded))
	}
}

// TestRollout_NeverReadyDeploymentFailsAtTimeoutAndIsRemediated: an upgrade
// whose Deployment never becomes ready (its pods fit no node) fails at its
// timeout, as Helm's own wait would, and is remediated as before: rolled
// back, retried once, rolled back, and stalled, the message naming the
// Deployment; Helm's history shows the same statuses a blocking wait gives.
func TestRollout_NeverReadyDeploymentFailsAtTimeoutAndIsRemediated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "never", "small", withVersion("0.1.0"), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
		hr.Spec.Upgrade = &kraanv1.Upgrade{Remediation: &kraanv1.UpgradeRemediation{Retries: 1}}
	})
	readyAt(t, ns, "never")

	update(t, ns, "never", func(hr *kraanv1.HelmRelease) {
		hr.Spec.Values = toJSON(unschedulablePods)
	})
	var hr *kraanv1.HelmRelease
	g.Eventually(func(g Gomega) {
		hr = get(g, ns, "never")
		stalled := condition(hr, kraanv1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(kraanv1.ReasonRetriesExceeded))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	g.Expect(condition(hr, kraanv1.StalledCondition).Message).To(And(
		ContainSubstring("timed out after 3s"), ContainSubstring("Deployment "+ns+"/never")))
	g.Expect(condition(hr, kraanv1.RemediatedCondition).Reason).To(Equal(kraanv1.ReasonRollbackSucceeded))
	g.Expect(hr.Status.UpgradeFailures).To(Equal(int64(2)), "one try and one retry")
	g.Expect(helmRevisions(g, ns, "never")).To(Equal([]string{
		"1=superseded", "2=failed", "3=superseded", "4=failed", "5=deployed",
	}))
	g.Expect(deployment(g, ns, "never").Spec.Template.Spec.NodeSelector).To(BeEmpty(), "rolled back")
}

// TestRollout_NewGenerationEndsAWait: Flux 2.8's
// CancelHealthCheckOnNewRevision, on by default. An install waits for pods
// that fit no node, with a timeout of 10 minutes; a new spec that lets them
// run ends that wait at once: the release is Ready with the new spec well
// within the test's deadline (3 minutes, so the old wait did not run out),
// the cut-short revision is neither counted as a failure nor remediated (no
// uninstall of the first install, no rollback).
func TestRollout_NewGenerationEndsAWait(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "superseded", "small", withVersion("0.1.0"),
		withValues(unschedulablePods),
		func(hr *kraanv1.HelmRelease) { hr.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute} })
	g.Eventually(func(g Gomega) {
		g.Expect(helmRevisions(g, ns, "superseded")).To(Equal([]string{"1=pending-install"}))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "the install waits for its pods")

	update(t, ns, "superseded", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = nil })
	hr := readyAt(t, ns, "superseded")
	g.Expect(hr.Status.InstallFailures).To(BeZero(), "a wait cut short is no failure")
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil(), "nothing was remediated")
	revisions := helmRevisions(g, ns, "superseded")
	g.Expect(revisions).To(HaveLen(2), "the cut-short install and the upgrade to the new spec: %v", revisions)
	g.Expect(revisions).To(ContainElement("2=deployed"))
	g.Expect(deployment(g, ns, "superseded").Spec.Template.Spec.NodeSelector).To(BeEmpty())
}

// TestRollout_DisableWaitIsReadyWithoutWaiting: with disableWait the release
// is Ready as soon as Helm has applied it, though its pods fit no node.
func TestRollout_DisableWaitIsReadyWithoutWaiting(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "nowait", "small", withVersion("0.1.0"),
		withValues(unschedulablePods),
		func(hr *kraanv1.HelmRelease) {
			hr.Spec.Install = &kraanv1.Install{ActionOptions: kraanv1.ActionOptions{DisableWait: true}}
			hr.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
		})
	hr := readyAt(t, ns, "nowait")
	g.Expect(condition(hr, kraanv1.ReleasedCondition).Reason).To(Equal(kraanv1.ReasonInstallSucceeded))
	g.Expect(helmRevisions(g, ns, "nowait")).To(ConsistOf("1=deployed"))
	g.Expect(deployment(g, ns, "nowait").Status.AvailableReplicas).To(BeZero(), "its pods cannot run")
}

// TestRollout_ReconcileRequestedDuringAWaitIsHandled: a reconcile request
// (reconcile.fluxcd.io/requestedAt) that arrives while Helm waits for the
// release's pods is answered once the wait ends: status records it as
// handled, as `flux reconcile` and `kubectl kraan reconcile` wait for. The run
// that was going on started before the request, so it cannot answer it.
func TestRollout_ReconcileRequestedDuringAWaitIsHandled(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	label := "e2e.kraan.io/" + ns
	newRelease(t, ns, "asked", "small", withVersion("0.1.0"),
		withValues(map[string]any{"nodeSelector": map[string]any{label: "go"}}))
	g.Eventually(func(g Gomega) {
		g.Expect(helmRevisions(g, ns, "asked")).To(ConsistOf("1=pending-install"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "the release waits for its pods")

	const token = "requested-during-the-wait"
	update(t, ns, "asked", func(hr *kraanv1.HelmRelease) {
		if hr.Annotations == nil {
			hr.Annotations = map[string]string{}
		}
		hr.Annotations["reconcile.fluxcd.io/requestedAt"] = token
	})
	labelNodes(t, label, "go")
	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "asked")
		g.Expect(hr.Status.LastHandledReconcileAt).To(Equal(token))
		g.Expect(condition(hr, kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "asked")).To(ConsistOf("1=deployed"), "the request made no new revision")
}
