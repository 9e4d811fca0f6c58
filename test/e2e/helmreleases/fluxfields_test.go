package helmreleases_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// The Flux helm.toolkit.fluxcd.io/v2 fields beyond the basics, each proven on
// the local plane: every test here fails when the field is ignored.

// TestFluxFields_PostRenderersAndCommonMetadata: kustomize patches and image
// overrides, then common labels and annotations, land on the deployed
// objects; a change to them upgrades the release, and removing them
// deploys the chart as rendered again.
func TestFluxFields_PostRenderersAndCommonMetadata(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "app", "small", withVersion("0.1.0"), func(hr *kraanv1.HelmRelease) {
		hr.Spec.PostRenderers = []kraanv1.PostRenderer{{Kustomize: &kraanv1.KustomizePostRenderer{
			Patches: []kraanv1.KustomizePatch{
				{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec: {replicas: 2}\n"},
				{Patch: "- op: add\n  path: /data/patched\n  value: by-json6902\n", Target: &kraanv1.ObjectSelector{Kind: "ConfigMap"}},
			},
			Images: []kraanv1.KustomizeImage{{Name: "registry.k8s.io/pause", NewTag: "3.9"}},
		}}}
		hr.Spec.CommonMetadata = &kraanv1.CommonMetadata{
			Labels:      map[string]string{"team": "payments"},
			Annotations: map[string]string{"owner": "platform"},
		}
	})
	readyAt(t, ns, "app")

	d := deployment(g, ns, "app")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)), "the strategic-merge patch")
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.9"), "the image override")
	g.Expect(configMapData(g, ns, "app")).To(HaveKeyWithValue("patched", "by-json6902"))
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Service{}, d} {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, obj)).To(Succeed())
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("team", "payments"), "%T", obj)
		g.Expect(obj.GetAnnotations()).To(HaveKeyWithValue("owner", "platform"), "%T", obj)
	}
	g.Expect(helmRevisions(g, ns, "app")).To(ConsistOf("1=deployed"))

	// Common metadata is part of the desired state: a change upgrades.
	update(t, ns, "app", func(hr *kraanv1.HelmRelease) { hr.Spec.CommonMetadata.Labels["team"] = "billing" })
	readyAt(t, ns, "app")
	g.Eventually(func(g Gomega) {
		g.Expect(deployment(g, ns, "app").Labels).To(HaveKeyWithValue("team", "billing"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "app")).To(ConsistOf("1=superseded", "2=deployed"))

	// Without post-renderers the chart's own rendering is back.
	update(t, ns, "app", func(hr *kraanv1.HelmRelease) {
		hr.Spec.PostRenderers = nil
		hr.Spec.CommonMetadata = nil
	})
	readyAt(t, ns, "app")
	g.Eventually(func(g Gomega) {
		d := deployment(g, ns, "app")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.10"))
		g.Expect(d.Labels).NotTo(HaveKey("team"))
		g.Expect(configMapData(g, ns, "app")).NotTo(HaveKey("patched"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "app")).To(ConsistOf("1=superseded", "2=superseded", "3=deployed"))
}

// TestFluxFields_BrokenPostRendererKeepsWhatIsDeployed: a patch with an
// invalid JSON 6902 path is a condition naming the post-renderer, and the
// deployed revision stays.
func TestFluxFields_BrokenPostRendererKeepsWhatIsDeployed(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "app", "small", withVersion("0.1.0"))
	readyAt(t, ns, "app")

	update(t, ns, "app", func(hr *kraanv1.HelmRelease) {
		hr.Spec.PostRenderers = []kraanv1.PostRenderer{{Kustomize: &kraanv1.KustomizePostRenderer{Patches: []kraanv1.KustomizePatch{
			{Patch: "- op: replace\n  path: /spec/no/such/field\n  value: 1\n", Target: &kraanv1.ObjectSelector{Kind: "Deployment"}},
		}}}}
	})
	g.Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "app"), kraanv1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("spec.postRenderers[0].kustomize"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "app")).To(ContainElement("1=deployed"))
	g.Expect(*deployment(g, ns, "app").Spec.Replicas).To(Equal(int32(1)))
}

// TestFluxFields_TakeOwnership: an object that exists and belongs to no
// release is refused with disableTakeOwnership, naming the object, and
// adopted in place (same UID) by default, as Flux does.
func TestFluxFields_TakeOwnership(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	existing := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: ns},
		Data:       map[string]string{"message": "made by hand"},
	}
	g.Expect(k8s.Create(context.Background(), existing)).To(Succeed())

	newRelease(t, ns, "own", "small", withVersion("0.1.0"), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Install = &kraanv1.Install{DisableTakeOwnership: true}
	})
	g.Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "own"), kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring(`ConfigMap "own"`))
		g.Expect(ready.Message).To(ContainSubstring("exists and cannot be imported"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(configMapData(g, ns, "own")).To(HaveKeyWithValue("message", "made by hand"))

	update(t, ns, "own", func(hr *kraanv1.HelmRelease) { hr.Spec.Install = nil })
	readyAt(t, ns, "own")
	adopted := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "own"}, adopted)).To(Succeed())
	g.Expect(adopted.UID).To(Equal(existing.UID), "the ConfigMap was recreated, not adopted")
	g.Expect(adopted.Data).To(HaveKeyWithValue("message", "hello from small"))
	g.Expect(adopted.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", "own"))
}

// TestFluxFields_RetryOnFailure: a failing upgrade under RetryOnFailure is
// neither rolled back nor stalled: it is tried again every retryInterval
// (each try a failed revision) until the cause is fixed.
func TestFluxFields_RetryOnFailure(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "retried", "realistic", withValues(realisticValues(false, false)), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Upgrade = &kraanv1.Upgrade{Strategy: &kraanv1.ActionStrategy{
			Name: kraanv1.StrategyRetryOnFailure, RetryInterval: &metav1.Duration{Duration: 3 * time.Second},
		}}
	})
	readyAt(t, ns, "retried")

	update(t, ns, "retried", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(realisticValues(true, false)) })
	g.Eventually(func(g Gomega) {
		revisions := helmRevisions(g, ns, "retried")
		g.Expect(revisions).To(ContainElement("1=deployed"), "revision 1 is still the one deployed: nothing was rolled back")
		g.Expect(revisions).To(HaveEach(Or(Equal("1=deployed"), HaveSuffix("=failed"), HaveSuffix("=pending-upgrade"))),
			"only failed retries after revision 1; a rollback would have deployed a revision")
		g.Expect(len(revisions)).To(BeNumerically(">=", 3), "the failed upgrade was tried again")
		hr := get(g, ns, "retried")
		ready := condition(hr, kraanv1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(kraanv1.ReasonRetryOnFailure))
		g.Expect(condition(hr, kraanv1.StalledCondition)).To(BeNil())
		g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	update(t, ns, "retried", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(realisticValues(false, false)) })
	hr := readyAt(t, ns, "retried")
	g.Expect(hr.Status.History).NotTo(BeEmpty())
	g.Expect(hr.Status.History[0].Status).To(Equal("deployed"))
}

// TestFluxFields_TestFiltersAndSchemaValidation: an excluded failing test
// does not run; values the chart's schema rejects install when schema
// validation is off.
func TestFluxFields_TestFiltersAndSchemaValidation(t *testing.T) {
	t.Run("test filters", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		newRepository(t, ns)
		newRelease(t, ns, "filtered", "realistic", withValues(realisticValues(false, true)), func(hr *kraanv1.HelmRelease) {
			hr.Spec.Test = &kraanv1.Test{Enable: true, Filters: []kraanv1.TestFilter{{Name: "filtered-realistic-test", Exclude: true}}}
		})
		hr := readyAt(t, ns, "filtered")
		g.Expect(condition(hr, kraanv1.TestSuccessCondition)).To(BeNil(), "the excluded test ran")
		g.Expect(helmRevisions(g, ns, "filtered")).To(ConsistOf("1=deployed"))
	})
	t.Run("schema validation off", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		newRepository(t, ns)
		newRelease(t, ns, "unchecked", "small", withVersion("0.1.0"), withValues(map[string]any{"message": 42}),
			func(hr *kraanv1.HelmRelease) {
				hr.Spec.Install = &kraanv1.Install{DisableSchemaValidation: true}
				hr.Spec.Upgrade = &kraanv1.Upgrade{DisableSchemaValidation: true}
			})
		readyAt(t, ns, "unchecked")
		g.Expect(configMapData(g, ns, "unchecked")).To(HaveKeyWithValue("message", "42"))
	})
}

// annotate sets the request annotations of a HelmRelease.
func annotate(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	update(t, ns, name, func(hr *kraanv1.HelmRelease) {
		if hr.Annotations == nil {
			hr.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			hr.Annotations[k] = v
		}
	})
}

// TestFluxFields_ForceAndResetRequests: Flux's request annotations. forceAt,
// equal to requestedAt, upgrades an in-sync release once; requestedAt alone
// only reconciles; resetAt, equal to requestedAt, resets the failure counters
// of a Stalled release so it is remediated and tried again.
func TestFluxFields_ForceAndResetRequests(t *testing.T) {
	const requestedAt, forceAt, resetAt = "reconcile.fluxcd.io/requestedAt", "reconcile.fluxcd.io/forceAt", "reconcile.fluxcd.io/resetAt"
	t.Run("force", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		newRepository(t, ns)
		newRelease(t, ns, "forced", "small", withVersion("0.1.0"))
		readyAt(t, ns, "forced")

		annotate(t, ns, "forced", map[string]string{requestedAt: "f1", forceAt: "f1"})
		g.Eventually(func(g Gomega) {
			hr := get(g, ns, "forced")
			g.Expect(hr.Status.LastHandledForceAt).To(Equal("f1"))
			g.Expect(hr.Status.LastAttemptedReleaseAction).To(Equal("upgrade"))
			g.Expect(helmRevisions(g, ns, "forced")).To(ConsistOf("1=superseded", "2=deployed"))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		annotate(t, ns, "forced", map[string]string{requestedAt: "r2"})
		g.Eventually(func(g Gomega) {
			g.Expect(get(g, ns, "forced").Status.LastHandledReconcileAt).To(Equal("r2"))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		g.Expect(helmRevisions(g, ns, "forced")).To(ConsistOf("1=superseded", "2=deployed"), "a handled force token forced again")
	})
	t.Run("reset", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		newRepository(t, ns)
		newRelease(t, ns, "stuck", "realistic", withValues(realisticValues(false, true)), func(hr *kraanv1.HelmRelease) {
			hr.Spec.Test = &kraanv1.Test{Enable: true}
		})
		stalled := func(g Gomega) *kraanv1.HelmRelease {
			hr := get(g, ns, "stuck")
			g.Expect(condition(hr, kraanv1.StalledCondition)).NotTo(BeNil())
			return hr
		}
		g.Eventually(stalled).WithTimeout(timeout).WithPolling(interval).Should(Not(BeNil()))
		g.Expect(condition(stalled(g), kraanv1.StalledCondition).Message).To(ContainSubstring(resetAt))

		// requestedAt alone reconciles but, as in Flux, keeps the counters.
		annotate(t, ns, "stuck", map[string]string{requestedAt: "r1"})
		g.Eventually(func(g Gomega) {
			g.Expect(stalled(g).Status.LastHandledReconcileAt).To(Equal("r1"))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		g.Expect(condition(stalled(g), kraanv1.RemediatedCondition)).To(BeNil())

		annotate(t, ns, "stuck", map[string]string{requestedAt: "x2", resetAt: "x2"})
		g.Eventually(func(g Gomega) {
			hr := get(g, ns, "stuck")
			g.Expect(hr.Status.LastHandledResetAt).To(Equal("x2"))
			remediated := condition(hr, kraanv1.RemediatedCondition)
			g.Expect(remediated).NotTo(BeNil(), "the reset release was not tried again")
			g.Expect(remediated.Reason).To(Equal(kraanv1.ReasonUninstallSucceeded))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	})
}
