package helmreleases_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// TestHelmRelease_InstallNoopUpgradeUninstall walks one release through its
// life: install, a reconcile that must not make a new revision, an upgrade by
// values, an upgrade by a valuesFrom ConfigMap change, and uninstall on delete.
func TestHelmRelease_InstallNoopUpgradeUninstall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	// Labelled as Flux asks of a valuesFrom source whose change must
	// upgrade at once (--watch-configs-label-selector's default).
	values := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "small-values", Namespace: ns,
			Labels: map[string]string{"reconcile.fluxcd.io/watch": "Enabled"}},
		Data: map[string]string{"values.yaml": "replicaCount: 2\n"},
	}
	g.Expect(k8s.Create(ctx, values)).To(Succeed())
	newRelease(t, ns, "app", "small", withVersion("0.1.0"), withValues(map[string]any{"message": "one"}),
		func(hr *kraanv1.HelmRelease) {
			hr.Spec.ValuesFrom = []kraanv1.ValuesReference{{Kind: "ConfigMap", Name: "small-values"}}
		})

	hr := readyAt(t, ns, "app")
	g.Expect(condition(hr, kraanv1.ReleasedCondition).Reason).To(Equal(kraanv1.ReasonInstallSucceeded))
	g.Expect(hr.Status.History).To(HaveLen(1))
	g.Expect(hr.Status.History[0].ChartVersion).To(Equal("0.1.0"))
	g.Expect(hr.Status.History[0].Action).To(Equal(kraanv1.ReleaseActionInstall))
	// Flux's inventory: every object of the manifest, with its namespace.
	g.Expect(hr.Status.Inventory).NotTo(BeNil())
	g.Expect(hr.Status.Inventory.Entries).To(ConsistOf(
		kraanv1.ResourceRef{ID: ns + "_app_apps_Deployment", Version: "v1"},
		kraanv1.ResourceRef{ID: ns + "_app__ConfigMap", Version: "v1"},
		kraanv1.ResourceRef{ID: ns + "_app__Service", Version: "v1"},
	))
	g.Expect(hr.Status.LastAttemptedReleaseActionDuration).NotTo(BeNil())
	g.Expect(deployment(g, ns, "app").Status.ReadyReplicas).To(Equal(int32(2)), "Helm waited for the Deployment")
	g.Expect(configMapData(g, ns, "app")).To(HaveKeyWithValue("message", "one"))

	// A requested reconcile with nothing changed keeps revision 1.
	update(t, ns, "app", func(hr *kraanv1.HelmRelease) {
		hr.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": time.Now().String()}
	})
	NewWithT(t).Eventually(func(g Gomega) {
		hr := get(g, ns, "app")
		g.Expect(hr.Status.LastHandledReconcileAt).To(Equal(hr.Annotations["reconcile.fluxcd.io/requestedAt"]))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "app")).To(ConsistOf("1=deployed"))

	// New inline values upgrade.
	update(t, ns, "app", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(map[string]any{"message": "two"}) })
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(configMapData(g, ns, "app")).To(HaveKeyWithValue("message", "two"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	hr = readyAt(t, ns, "app")
	g.Expect(condition(hr, kraanv1.ReleasedCondition).Reason).To(Equal(kraanv1.ReasonUpgradeSucceeded))
	g.Expect(hr.Status.History[0].Version).To(Equal(2))
	g.Expect(hr.Status.History[0].Action).To(Equal(kraanv1.ReleaseActionUpgrade))
	g.Expect(hr.Status.History[1].Action).To(Equal(kraanv1.ReleaseActionInstall), "older snapshots keep theirs")
	g.Expect(hr.Status.Inventory.Entries).To(HaveLen(3))

	// A change of the watched valuesFrom ConfigMap alone upgrades too.
	values.Data["values.yaml"] = "replicaCount: 3\n"
	g.Expect(k8s.Update(ctx, values)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(deployment(g, ns, "app").Status.ReadyReplicas).To(Equal(int32(3)))
		g.Expect(helmRevisions(g, ns, "app")).To(ContainElement("3=deployed"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// Delete uninstalls: the release records and its objects go.
	g.Expect(k8s.Delete(ctx, get(g, ns, "app"))).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &kraanv1.HelmRelease{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HelmRelease is still there: %v", err)
		g.Expect(helmRevisions(g, ns, "app")).To(BeEmpty())
		err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the release's ConfigMap is still there")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestHelmRelease_ChartVersionRangeUpgrades resolves a semver range against the
// repository and upgrades when the range moves.
func TestHelmRelease_ChartVersionRangeUpgrades(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "ranged", "small", withVersion("<0.2.0"))
	hr := readyAt(t, ns, "ranged")
	g.Expect(hr.Status.LastAttemptedRevision).To(Equal("0.1.0"))

	update(t, ns, "ranged", func(hr *kraanv1.HelmRelease) { hr.Spec.Chart.Spec.Version = ">=0.1.0" })
	NewWithT(t).Eventually(func(g Gomega) {
		hr := get(g, ns, "ranged")
		g.Expect(hr.Status.History).NotTo(BeEmpty())
		g.Expect(hr.Status.History[0].ChartVersion).To(Equal("0.2.0"))
		g.Expect(hr.Status.History[0].Status).To(Equal("deployed"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestHelmRelease_DependsOnStartsWhenDependencyIsReady holds a release until
// the one it depends on is Ready.
func TestHelmRelease_DependsOnStartsWhenDependencyIsReady(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "second", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.DependsOn = []kraanv1.DependencyReference{{Name: "first"}}
	})
	NewWithT(t).Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "second"), kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(kraanv1.ReasonDependencyNotReady))
		g.Expect(ready.Message).To(ContainSubstring(ns + "/first"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "second")).To(BeEmpty(), "installed before its dependency")

	newRelease(t, ns, "first", "small")
	first := readyAt(t, ns, "first")
	second := readyAt(t, ns, "second")
	// Event-driven: well before the 5-minute safety requeue.
	started := condition(second, kraanv1.ReleasedCondition).LastTransitionTime.Time
	g.Expect(started.Sub(condition(first, kraanv1.ReadyCondition).LastTransitionTime.Time)).To(BeNumerically("<", time.Minute))
}

// TestHelmRelease_DependsOnReadyExpr: Flux's dependsOn[].readyExpr replaces
// the built-in check. The dependency here never becomes Ready (its chart does
// not exist); the dependent waits, naming the expression, until the
// expression over `dep` and `self` is true, and is then installed. An
// expression that cannot compile stalls the release, naming the field.
func TestHelmRelease_DependsOnReadyExpr(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "never-ready", "no-such-chart")
	newRelease(t, ns, "after", "small", func(hr *kraanv1.HelmRelease) {
		hr.Labels = map[string]string{"tier": "app"}
		hr.Spec.DependsOn = []kraanv1.DependencyReference{{Name: "never-ready",
			ReadyExpr: "has(dep.metadata.annotations) && dep.metadata.annotations['tier-ready'] == self.metadata.labels.tier"}}
	})
	g.Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "after"), kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(kraanv1.ReasonDependencyNotReady))
		g.Expect(ready.Message).To(ContainSubstring("spec.dependsOn[0].readyExpr is false"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "after")).To(BeEmpty(), "installed before its readyExpr held")

	dep := get(g, ns, "never-ready")
	dep.Annotations = map[string]string{"tier-ready": "app"}
	g.Expect(k8s.Update(context.Background(), dep)).To(Succeed())
	readyAt(t, ns, "after")
	g.Expect(condition(get(g, ns, "never-ready"), kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))

	newRelease(t, ns, "broken-expr", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.DependsOn = []kraanv1.DependencyReference{{Name: "after", ReadyExpr: "dep.status.("}}
	})
	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "broken-expr")
		ready := condition(hr, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(kraanv1.ReasonInvalidCELExpression), ready.Message)
		g.Expect(ready.Message).To(ContainSubstring("spec.dependsOn[0].readyExpr"))
		stalled := condition(hr, kraanv1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestHelmRelease_FromAnOCIRegistry installs a chart from an OCI registry
// (a HelmRepository of type oci) and upgrades when a newer tag matches.
func TestHelmRelease_FromAnOCIRegistry(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	registry := chartrepo.NewOCIRegistry(t)
	registry.Push(chartrepo.ChartDir("small"), "0.1.0")
	repo := newHelmRepository(ns, "oci", registry.URL())
	repo.Spec.Type, repo.Spec.Insecure = "oci", true
	g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	newRelease(t, ns, "from-oci", "small", withVersion(">=0.1.0"), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Chart.Spec.SourceRef.Name = "oci"
		// The tag list is cached for a minute; the interval resync then sees
		// the new tag, as a HelmRepository's interval does in Flux.
		hr.Spec.Interval = metav1.Duration{Duration: 15 * time.Second}
	})
	hr := readyAt(t, ns, "from-oci")
	g.Expect(hr.Status.LastAttemptedRevision).To(Equal("0.1.0"))

	registry.Push(chartrepo.ChartDir("small"), "0.2.0")
	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "from-oci")
		g.Expect(hr.Status.History).NotTo(BeEmpty())
		g.Expect(hr.Status.History[0].ChartVersion).To(Equal("0.2.0"))
		g.Expect(hr.Status.History[0].Status).To(Equal("deployed"))
	}).WithTimeout(2 * timeout).WithPolling(interval).Should(Succeed())
}
