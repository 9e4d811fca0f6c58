package addonslayer

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

func namespaceYAML(name string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n"
}

func configMapYAML(ns, name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
		"\ndata:\n  value: \"" + value + "\"\n"
}

func helmReleaseYAML(ns, name string) string {
	return "apiVersion: kraan.io/v1alpha1\nkind: HelmRelease\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
		"\nspec:\n  interval: 10m\n  chart:\n    spec:\n      chart: podinfo\n      sourceRef:\n        kind: HelmRepository\n        name: podinfo\n"
}

func (e *layerEnv) configMap(g Gomega, ns, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm
}

// One API server for the cases below: starting one costs seconds. Each case
// uses its own source, layers and namespaces.
func TestReconciler(t *testing.T) {
	e := startLayerEnv(t)
	t.Run("deploys plain objects and HelmReleases once they are ready", e.testDeploys)
	t.Run("dependents wait for their dependencies and start on their change", e.testDependsOn)
	t.Run("a dependency cycle stalls every layer in it", e.testCycle)
	t.Run("a too high k8sVersion waits", e.testK8sVersion)
	t.Run("a missing path fails naming path and revision", e.testPathNotFound)
	t.Run("malformed YAML fails naming the file and keeps what was deployed", e.testMalformed)
	t.Run("a tampered artifact fails with a digest mismatch", e.testTampered)
	t.Run("removed objects are pruned after the grace period", e.testPrune)
	t.Run("an object moved to another layer keeps its UID", e.testHandover)
	t.Run("an object owned by another layer fails naming both", e.testConflict)
	t.Run("hold suspends HelmReleases and unhold resumes them", e.testHold)
	t.Run("a tenant's layer label neither blocks a layer nor lets it touch the tenant's objects", e.testLabelIsNoClaim)
	t.Run("readiness timeout fails and recovers", e.testTimeout)
	t.Run("a waiting layer checks health without applying again, and re-creates a deleted object at once", e.testWaitingChecksHealthOnly)
	t.Run("layer tests run after the rest is ready, gate Deployed and run again for a new version", e.testLayerTestsGateDeployed)
	t.Run("a failed layer test fails the layer with its output, a new revision runs it again", e.testLayerTestFailure)
	t.Run("deletion prunes and removes the metrics", e.testDelete)
	t.Run("a layer Kraan left behind is deleted without touching what Kraan applied, removing only our finalizer", e.testDeleteKraanLayer)
	t.Run("a layer whose status is Kraan's is left alone until taken over", e.testKraanLayerAwaitsTakeOver)
	t.Run("a layer Kraan deployed is reconciled past Kraan's inventory without touching what Kraan applied", e.testReconcileKraanLayer)
	t.Run("a rejected Secret's values reach no condition, event, log line or metric", e.testSecretsNeverLeak)
}

func (e *layerEnv) testDeploys(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "deploys", map[string]string{
		"layers/one/ns.yaml":  namespaceYAML("deploys"),
		"layers/one/all.yaml": configMapYAML("deploys", "settings", "a") + "---\n" + helmReleaseYAML("deploys", "podinfo"),
	}, false)
	e.createLayer(t, "deploys", "deploys", "layers/one")

	l := e.waitState(t, "deploys", kraanv1.ApplyingState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("waiting for HelmRelease deploys/podinfo"))
	g.Expect(conditionStatus(l, kraanv1.ReconcilingCondition)).To(Equal(metav1.ConditionTrue))
	g.Eventually(func(g Gomega) { e.markHelmReleaseReady(g, "deploys", "podinfo") }).Should(Succeed())

	l = e.waitState(t, "deploys", kraanv1.DeployedState)
	for _, c := range []string{kraanv1.ReadyCondition, kraanv1.DeployedCondition, kraanv1.SourceReadyCondition, kraanv1.PrerequisitesMetCondition} {
		g.Expect(conditionStatus(l, c)).To(Equal(metav1.ConditionTrue), c)
	}
	// Negative-polarity conditions are removed once false (kstatus, Flux).
	g.Expect(conditionStatus(l, kraanv1.StalledCondition)).To(BeEmpty())
	g.Expect(conditionStatus(l, kraanv1.ReconcilingCondition)).To(BeEmpty())
	g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
	g.Expect(l.Status.Version).To(Equal("1"))
	g.Expect(l.Status.Revision).To(HavePrefix("main@sha1:"))
	g.Expect(l.Status.Resources).To(HaveLen(3))
	for _, r := range l.Status.Resources {
		g.Expect(r.Status).To(Equal(kraanv1.DeployedState), r.Kind)
	}
	cm := e.configMap(g, "deploys", "settings")
	g.Expect(cm.Labels).To(HaveKeyWithValue(manifest.LayerLabel, "deploys"))
	g.Expect(cm.ManagedFields).To(ContainElement(HaveField("Manager", apply.FieldManager)))
	v, ok := layerGauge(t, "deploys", kraanv1.ReadyCondition, "True")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(1.0))
	// The removed Stalled still reads False on the gauge: dashboards that
	// alert on status="False" keep working.
	v, ok = layerGauge(t, "deploys", kraanv1.StalledCondition, "False")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(1.0))
}

func (e *layerEnv) testDependsOn(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "deps", map[string]string{
		"base/cm.yaml": namespaceYAML("deps") + "---\n" + configMapYAML("deps", "base", "b"),
		"apps/cm.yaml": configMapYAML("deps", "apps", "a"),
	}, false)
	e.createLayer(t, "deps-apps", "deps", "apps", dependsOn("deps-base@1"))
	l := e.waitState(t, "deps-apps", kraanv1.ApplyPendingState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("Waiting for layer: deps-base, version: 1"))
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("not found"))
	g.Expect(conditionStatus(l, kraanv1.PrerequisitesMetCondition)).To(Equal(metav1.ConditionFalse))

	e.createLayer(t, "deps-base", "deps", "base")
	base := e.waitState(t, "deps-base", kraanv1.DeployedState)
	apps := e.waitState(t, "deps-apps", kraanv1.DeployedState)
	baseAt := apimetaTime(base, kraanv1.DeployedCondition)
	appsAt := apimetaTime(apps, kraanv1.DeployedCondition)
	g.Expect(appsAt).NotTo(BeTemporally("<", baseAt), "the dependent was Deployed before its dependency")
	g.Expect(e.configMap(g, "deps", "apps").CreationTimestamp.Time).NotTo(BeTemporally("<", baseAt.Add(-time.Second)))
}

func apimetaTime(l *kraanv1.AddonsLayer, t string) time.Time {
	for _, c := range l.Status.Conditions {
		if c.Type == t {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func (e *layerEnv) testCycle(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "cycle", map[string]string{"x/cm.yaml": configMapYAML("default", "cycle-x", "x"), "y/cm.yaml": configMapYAML("default", "cycle-y", "y")}, false)
	e.createLayer(t, "cycle-x", "cycle", "x", dependsOn("cycle-y@1"))
	e.createLayer(t, "cycle-y", "cycle", "y", dependsOn("cycle-x@1"))
	for _, name := range []string{"cycle-x", "cycle-y"} {
		g.Eventually(func(g Gomega) {
			l := e.layer(g, name)
			g.Expect(conditionStatus(l, kraanv1.StalledCondition)).To(Equal(metav1.ConditionTrue), "layer %s: %s", name, layerReadyMessage(l))
			g.Expect(layerReadyMessage(l)).To(Or(ContainSubstring("cycle-x → cycle-y → cycle-x"), ContainSubstring("cycle-y → cycle-x → cycle-y")))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "cycle-x"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a layer in a cycle applied its objects")
}

func (e *layerEnv) testK8sVersion(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "k8s", map[string]string{"l/cm.yaml": configMapYAML("default", "k8s", "k")}, false)
	e.createLayer(t, "k8s-future", "k8s", "l", k8sVersion("v9.99"))
	l := e.waitState(t, "k8s-future", kraanv1.K8sVersionState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("requires v9.99"))
}

func (e *layerEnv) testPathNotFound(t *testing.T) {
	g := NewWithT(t)
	art := e.setSource(t, "nopath", map[string]string{"other/cm.yaml": configMapYAML("default", "np", "n")}, false)
	e.createLayer(t, "nopath", "nopath", "missing")
	l := e.waitState(t, "nopath", kraanv1.FailedState)
	g.Expect(layerReadyMessage(l)).To(And(ContainSubstring("./missing"), ContainSubstring(art.Revision)))
	g.Expect(conditionStatus(l, kraanv1.StalledCondition)).To(Equal(metav1.ConditionTrue))
	g.Expect(conditionStatus(l, kraanv1.SourceReadyCondition)).To(Equal(metav1.ConditionFalse))
}

func (e *layerEnv) testMalformed(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "malformed", map[string]string{"l/cm.yaml": configMapYAML("default", "kept", "v1")}, false)
	e.createLayer(t, "malformed", "malformed", "l")
	e.waitState(t, "malformed", kraanv1.DeployedState)
	e.setSource(t, "malformed", map[string]string{
		"l/cm.yaml":  configMapYAML("default", "kept", "v2"),
		"l/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed\n",
	}, false)
	l := e.waitState(t, "malformed", kraanv1.FailedState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("l/bad.yaml"))
	cm := e.configMap(g, "default", "kept")
	g.Expect(cm.Data["value"]).To(Equal("v1"), "nothing of the broken revision may be applied")
}

func (e *layerEnv) testTampered(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "tampered", map[string]string{"l/cm.yaml": configMapYAML("default", "tampered", "t")}, true)
	e.createLayer(t, "tampered", "tampered", "l")
	l := e.waitState(t, "tampered", kraanv1.FailedState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("digest mismatch"))
	g.Expect(conditionStatus(l, kraanv1.SourceReadyCondition)).To(Equal(metav1.ConditionFalse))
}

func (e *layerEnv) testPrune(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "prune", map[string]string{"l/cm.yaml": configMapYAML("default", "stays", "s") + "---\n" +
		configMapYAML("default", "goes", "g") + "---\n" + configMapYAML("default", "optout", "o")}, false)
	e.createLayer(t, "prune", "prune", "l", interval(3*time.Second))
	e.waitState(t, "prune", kraanv1.DeployedState)
	optout := e.configMap(g, "default", "optout")
	optout.Annotations = map[string]string{apply.PruneAnnotation: apply.PruneDisabled}
	g.Expect(e.c.Update(context.Background(), optout)).To(Succeed())

	removedAt := time.Now()
	e.setSource(t, "prune", map[string]string{"l/cm.yaml": configMapYAML("default", "stays", "s")}, false)
	g.Eventually(func(g Gomega) {
		g.Expect(e.configMap(g, "default", "goes").Annotations).To(HaveKey(apply.ReleasedAtAnnotation))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func() bool {
		err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "goes"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(20 * time.Second).Should(BeTrue())
	g.Expect(time.Since(removedAt)).To(BeNumerically(">=", 2*time.Second), "pruned before the grace period")
	e.configMap(g, "default", "optout") // still there
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "prune")
		g.Expect(l.Status.State).To(Equal(kraanv1.DeployedState))
		g.Expect(l.Status.Resources).To(HaveLen(1))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func (e *layerEnv) testHandover(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "move", map[string]string{
		"a/cm.yaml": configMapYAML("default", "moving", "from-a"),
		"b/cm.yaml": configMapYAML("default", "b-own", "b"),
	}, false)
	// The grace period is long enough for move-b to adopt, short enough for
	// move-a to notice the adoption (at its end) within the test.
	e.createLayer(t, "move-a", "move", "a", interval(10*time.Second))
	e.createLayer(t, "move-b", "move", "b", interval(10*time.Second))
	e.waitState(t, "move-a", kraanv1.DeployedState)
	e.waitState(t, "move-b", kraanv1.DeployedState)
	uid := e.configMap(g, "default", "moving").UID

	e.setSource(t, "move", map[string]string{
		"a/.keep":   "",
		"b/cm.yaml": configMapYAML("default", "b-own", "b") + "---\n" + configMapYAML("default", "moving", "from-b"),
	}, false)
	g.Eventually(func(g Gomega) {
		cm := e.configMap(g, "default", "moving")
		g.Expect(cm.Labels).To(HaveKeyWithValue(manifest.LayerLabel, "move-b"))
		g.Expect(cm.Data["value"]).To(Equal("from-b"))
		g.Expect(cm.UID).To(Equal(uid))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "move-a")
		g.Expect(l.Status.State).To(Equal(kraanv1.DeployedState))
		g.Expect(l.Status.Resources).To(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func (e *layerEnv) testConflict(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "conflict", map[string]string{
		"a/cm.yaml": configMapYAML("default", "contested", "a"),
		"b/cm.yaml": configMapYAML("default", "contested", "b"),
	}, false)
	e.createLayer(t, "conflict-a", "conflict", "a")
	e.waitState(t, "conflict-a", kraanv1.DeployedState)
	e.createLayer(t, "conflict-b", "conflict", "b")
	l := e.waitState(t, "conflict-b", kraanv1.FailedState)
	g.Expect(layerReadyMessage(l)).To(And(ContainSubstring("conflict-a"), ContainSubstring("conflict-b"),
		ContainSubstring("ConfigMap default/contested")))
	g.Expect(e.configMap(g, "default", "contested").Data["value"]).To(Equal("a"))
}

func (e *layerEnv) testHold(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "hold", map[string]string{"l/hr.yaml": namespaceYAML("hold") + "---\n" + helmReleaseYAML("hold", "held")}, false)
	e.createLayer(t, "hold", "hold", "l")
	e.waitState(t, "hold", kraanv1.ApplyingState)
	g.Eventually(func(g Gomega) { e.markHelmReleaseReady(g, "hold", "held") }).Should(Succeed())
	e.waitState(t, "hold", kraanv1.DeployedState)

	e.setHold(g, "hold", true)
	l := e.waitState(t, "hold", kraanv1.HoldState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("on hold"))
	g.Eventually(func(g Gomega) { g.Expect(e.helmRelease(g, "hold", "held").Spec.Suspend).To(BeTrue()) }).Should(Succeed())

	e.setHold(g, "hold", false)
	g.Eventually(func(g Gomega) {
		hr := e.helmRelease(g, "hold", "held")
		g.Expect(hr.Spec.Suspend).To(BeFalse())
		g.Expect(hr.Annotations).NotTo(HaveKey(suspendedByHoldAnnotation))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func (e *layerEnv) setHold(g Gomega, name string, hold bool) {
	g.Eventually(func(g Gomega) {
		l := e.layer(g, name)
		l.Spec.Hold = hold
		g.Expect(e.c.Update(context.Background(), l)).To(Succeed())
	}).Should(Succeed())
}

func (e *layerEnv) helmRelease(g Gomega, ns, name string) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	g.Expect(e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, hr)).To(Succeed())
	return hr
}

func (e *layerEnv) testTimeout(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "slow", map[string]string{"l/hr.yaml": namespaceYAML("slow") + "---\n" + helmReleaseYAML("slow", "slow")}, false)
	e.createLayer(t, "slow", "slow", "l", timeout(2*time.Second))
	l := e.waitState(t, "slow", kraanv1.FailedState)
	g.Expect(layerReadyMessage(l)).To(And(ContainSubstring("HelmRelease slow/slow"), ContainSubstring("spec.timeout")))
	g.Eventually(func(g Gomega) { e.markHelmReleaseReady(g, "slow", "slow") }).Should(Succeed())
	e.waitState(t, "slow", kraanv1.DeployedState)
}

func (e *layerEnv) testDelete(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "delete", map[string]string{"l/cm.yaml": configMapYAML("default", "deleted-with-layer", "d")}, false)
	e.createLayer(t, "delete", "delete", "l", interval(time.Second))
	e.waitState(t, "delete", kraanv1.DeployedState)
	_, ok := layerGauge(t, "delete", kraanv1.ReadyCondition, "True")
	g.Expect(ok).To(BeTrue())

	g.Expect(e.c.Delete(context.Background(), &kraanv1.AddonsLayer{ObjectMeta: metav1.ObjectMeta{Name: "delete"}})).To(Succeed())
	g.Eventually(func() bool {
		err := e.c.Get(context.Background(), types.NamespacedName{Name: "delete"}, &kraanv1.AddonsLayer{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(20 * time.Second).Should(BeTrue())
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "deleted-with-layer"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	g.Eventually(func() bool {
		_, ok := layerGauge(t, "delete", kraanv1.ReadyCondition, "True")
		return ok
	}).Should(BeFalse(), "metrics of a deleted layer remain")
}

// testWaitingChecksHealthOnly: each status change of a HelmRelease reconciles
// its layer; while the layer waits for what it just applied, unchanged, those
// reconciles read health and apply nothing (no dry run), but an object
// deleted meanwhile is re-created at once.
func (e *layerEnv) testWaitingChecksHealthOnly(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "waits", map[string]string{
		"layers/one/ns.yaml":  namespaceYAML("waits"),
		"layers/one/all.yaml": helmReleaseYAML("waits", "a") + "---\n" + helmReleaseYAML("waits", "b"),
	}, false)
	e.createLayer(t, "waits", "waits", "layers/one")
	e.waitState(t, "waits", kraanv1.ApplyingState)
	// The layer's first reconciles may still re-create an object their
	// cache has not seen yet (a deleted object is re-created at once): count
	// from when they are over, which is when the count stops moving.
	g.Eventually(func(g Gomega) {
		n := e.dryRuns.in("waits")
		g.Consistently(func() int64 { return e.dryRuns.in("waits") }, 300*time.Millisecond, 50*time.Millisecond).Should(Equal(n))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	before := e.dryRuns.in("waits")

	for _, step := range []string{"pulling", "creating", "waiting"} {
		g.Eventually(func(g Gomega) {
			hr := &kraanv1.HelmRelease{}
			g.Expect(e.c.Get(context.Background(), types.NamespacedName{Namespace: "waits", Name: "a"}, hr)).To(Succeed())
			hr.Status.ObservedGeneration = hr.Generation
			apimeta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: kraanv1.ReadyCondition,
				Status: metav1.ConditionFalse, Reason: kraanv1.ReasonProgressing, Message: "still " + step, ObservedGeneration: hr.Generation})
			g.Expect(e.c.Status().Update(context.Background(), hr)).To(Succeed())
		}).Should(Succeed())
		g.Eventually(func(g Gomega) string { return layerReadyMessage(e.layer(g, "waits")) }).
			WithTimeout(10*time.Second).Should(ContainSubstring("still "+step), "the layer reconciled on the change")
	}
	g.Expect(e.dryRuns.in("waits")).To(Equal(before), "no object was dry-run applied again")

	b := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "waits", Name: "b"}}
	g.Expect(e.c.Delete(context.Background(), b)).To(Succeed())
	g.Eventually(func(g Gomega) {
		recreated := &kraanv1.HelmRelease{}
		g.Expect(e.c.Get(context.Background(), client.ObjectKeyFromObject(b), recreated)).To(Succeed())
		g.Expect(recreated.DeletionTimestamp.IsZero()).To(BeTrue())
	}).WithTimeout(10*time.Second).Should(Succeed(), "a deleted object is re-created within the window")

	for _, name := range []string{"a", "b"} {
		g.Eventually(func(g Gomega) { e.markHelmReleaseReady(g, "waits", name) }).Should(Succeed())
	}
	e.waitState(t, "waits", kraanv1.DeployedState)
}
