package addonslayer

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// kraanHelmReleaseKind is how Kraan's controller names the kind of each
// entry of status.resources: resource.group, without an apiVersion.
const kraanHelmReleaseKind = "helmreleases.helm.toolkit.fluxcd.io"

// takenOver is what `kubectl kraan takeover` leaves on a layer whose
// status Kraan wrote: the operator's from then on.
var takenOver = map[string]string{kraanv1.TakeOverAnnotation: "2026-12-03T00:00:00Z"}

// otherFinalizer stands for a finalizer some other tool put on a layer.
const otherFinalizer = "example.com/backup"

// testDeleteKraanLayer deletes a layer as Kraan's controller left it, once
// taken over: held, Kraan's finalizer, and Kraan's
// inventory in status.resources naming a Flux HelmRelease that Kraan applied
// (label kraan/layer, an ownerReference to the layer). The finalizer name is
// shared with Kraan on purpose, so the operator finishes the deletion: it
// must not hang on Kraan's inventory, must not release or delete the Flux
// HelmRelease (not ours: Kubernetes garbage collection follows Kraan's
// ownerReference, as after Kraan's own finalizer), and must remove no
// finalizer but its own.
func (e *layerEnv) testDeleteKraanLayer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.installFluxHelmReleaseCRD(t)
	const name, ns = "kraan-left", "kraan-left"
	g.Expect(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	e.setSource(t, name, map[string]string{"l/cm.yaml": configMapYAML(ns, "not-applied", "n")}, false)
	layer := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{kraanv1.Finalizer, otherFinalizer}, Annotations: takenOver},
		Spec: kraanv1.AddonsLayerSpec{Version: "0.1.01", Hold: true, Interval: metav1.Duration{Duration: time.Second},
			Timeout: metav1.Duration{Duration: 30 * time.Second},
			Source:  kraanv1.SourceSpec{Name: name, Path: "./l"}, Prereqs: kraanv1.PrereqsSpec{K8sVersion: "1.16"}},
	}
	g.Expect(e.c.Create(ctx, layer)).To(Succeed())
	t.Cleanup(func() { e.dropFinalizers(t, name) })
	hr := kraanAppliedHelmRelease(layer, ns, "microservice-1")
	g.Expect(e.c.Create(ctx, hr)).To(Succeed())
	e.writeKraanStatus(t, name, kraanv1.Resource{Kind: kraanHelmReleaseKind, Namespace: ns, Name: "microservice-1",
		Status: kraanv1.DeployedState, LastTransitionTime: metav1.Now()})
	e.waitState(t, name, kraanv1.HoldState)

	g.Expect(e.c.Delete(ctx, layer)).To(Succeed())
	g.Eventually(func(g Gomega) {
		l := &kraanv1.AddonsLayer{}
		g.Expect(e.c.Get(ctx, types.NamespacedName{Name: name}, l)).To(Succeed())
		g.Expect(l.Finalizers).To(Equal([]string{otherFinalizer}), "state %s: %s", l.Status.State, layerReadyMessage(l))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	live := hr.DeepCopy()
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(hr), live)).To(Succeed())
	g.Expect(live.GetDeletionTimestamp()).To(BeNil(), "the operator deleted a HelmRelease Kraan applied")
	g.Expect(live.GetAnnotations()).NotTo(HaveKey(apply.ReleasedAtAnnotation))
	g.Expect(live.GetLabels()).To(Equal(hr.GetLabels()))
	g.Expect(live.GetResourceVersion()).To(Equal(hr.GetResourceVersion()), "the operator wrote to a HelmRelease Kraan applied")
	err := e.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "not-applied"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a held layer applied its source")
}

// installFluxHelmReleaseCRD installs helm-controller's HelmRelease CRD, the
// kind Kraan's layers own.
func (e *layerEnv) installFluxHelmReleaseCRD(t *testing.T) {
	crds := os.Getenv("KRAAN_HELM_CONTROLLER_CRDS")
	NewWithT(t).Expect(crds).NotTo(BeEmpty(), "KRAAN_HELM_CONTROLLER_CRDS is not set: run the tests with `make test`")
	_, err := envtest.InstallCRDs(e.config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}

// kraanAppliedHelmRelease is a Flux HelmRelease as Kraan applies one for
// layer: Kraan's layer label and a controller ownerReference to the layer.
func kraanAppliedHelmRelease(layer *kraanv1.AddonsLayer, ns, name string) *unstructured.Unstructured {
	hr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2",
		"kind":       "HelmRelease",
		"metadata": map[string]any{"name": name, "namespace": ns,
			"labels": map[string]any{manifest.KraanLayerLabel: layer.Name}},
		"spec": map[string]any{"interval": "1m", "chart": map[string]any{"spec": map[string]any{
			"chart": "microservice", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "microservice"}}}},
	}}
	hr.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: kraanv1.GroupVersion.String(), Kind: "AddonsLayer",
		Name: layer.Name, UID: layer.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}})
	return hr
}

// writeKraanStatus writes the status Kraan's controller writes for a held
// layer, with res as its inventory, and waits until it is stored.
func (e *layerEnv) writeKraanStatus(t *testing.T, name string, res kraanv1.Resource) {
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		l := &kraanv1.AddonsLayer{}
		g.Expect(e.c.Get(context.Background(), types.NamespacedName{Name: name}, l)).To(Succeed())
		l.Status.State, l.Status.Version = kraanv1.HoldState, l.Spec.Version
		l.Status.Resources = []kraanv1.Resource{res}
		g.Expect(e.c.Status().Update(context.Background(), l)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		l := &kraanv1.AddonsLayer{}
		g.Expect(e.c.Get(context.Background(), types.NamespacedName{Name: name}, l)).To(Succeed())
		g.Expect(l.Status.Resources).To(ConsistOf(HaveField("Kind", res.Kind)))
	}).Should(Succeed())
}

// dropFinalizers lets a layer the test left with a foreign finalizer go.
func (e *layerEnv) dropFinalizers(t *testing.T, name string) {
	l := &kraanv1.AddonsLayer{ObjectMeta: metav1.ObjectMeta{Name: name}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	NewWithT(t).Expect(client.IgnoreNotFound(e.c.Patch(context.Background(), l, patch))).To(Succeed())
}

// testReconcileKraanLayer: a layer Kraan deployed, its inventory Kraan's,
// is reconciled by the operator once taken over and unheld. Kraan's inventory entries are
// not the operator's to release or prune: the layer is Deployed with its own
// inventory, and the Flux HelmRelease Kraan applied is not written to.
func (e *layerEnv) testReconcileKraanLayer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.installFluxHelmReleaseCRD(t)
	const name, ns = "kraan-deployed", "kraan-deployed"
	g.Expect(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	e.setSource(t, name, map[string]string{"l/cm.yaml": configMapYAML(ns, "settings", "s")}, false)
	// Held until Kraan's status is written, so that the operator's first
	// full reconcile starts from Kraan's inventory.
	e.createLayer(t, name, name, "l", func(l *kraanv1.AddonsLayer) {
		l.Finalizers, l.Spec.Hold, l.Spec.Interval = []string{kraanv1.Finalizer}, true, metav1.Duration{Duration: time.Second}
		l.Annotations = takenOver
	})
	layer := e.layer(g, name)
	hr := kraanAppliedHelmRelease(layer, ns, "microservice-1")
	g.Expect(e.c.Create(ctx, hr)).To(Succeed())
	e.writeKraanStatus(t, name, kraanv1.Resource{Kind: kraanHelmReleaseKind, Namespace: ns, Name: "microservice-1",
		Status: kraanv1.DeployedState, LastTransitionTime: metav1.Now()})

	g.Expect(e.c.Patch(ctx, layer, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hold":false}}`)))).To(Succeed())
	l := e.waitState(t, name, kraanv1.DeployedState)
	g.Expect(l.Status.Resources).To(ConsistOf(And(HaveField("APIVersion", "v1"), HaveField("Name", "settings"))))
	live := hr.DeepCopy()
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(hr), live)).To(Succeed())
	g.Expect(live.GetResourceVersion()).To(Equal(hr.GetResourceVersion()), "the operator wrote to a HelmRelease Kraan applied")
}

// testKraanLayerAwaitsTakeOver: a layer whose status Kraan's controller
// wrote (one condition named after the state, no Ready) is not the
// operator's until it carries the take-over annotation. Unheld, it is still
// not applied and nothing is written to it; once taken over it is applied
// and Deployed, with Kraan's finalizer kept as the operator's own.
func (e *layerEnv) testKraanLayerAwaitsTakeOver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name, ns = "kraan-awaits", "kraan-awaits"
	g.Expect(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	e.setSource(t, name, map[string]string{"l/cm.yaml": configMapYAML(ns, "settings", "s")}, false)
	e.createLayer(t, name, name, "l", func(l *kraanv1.AddonsLayer) {
		l.Finalizers, l.Spec.Hold = []string{kraanv1.Finalizer}, true
	})
	e.waitState(t, name, kraanv1.HoldState)
	// What Kraan's setStatus leaves: the whole status replaced, one condition.
	g.Eventually(func(g Gomega) {
		l := e.layer(g, name)
		l.Status = kraanv1.AddonsLayerStatus{State: kraanv1.DeployedState, Version: l.Spec.Version, Revision: "main@sha1:kraan",
			ObservedGeneration: l.Generation, Conditions: []metav1.Condition{{Type: kraanv1.DeployedState, Status: metav1.ConditionTrue,
				Reason: kraanv1.DeployedState, Message: "AddonsLayer version 1 is Deployed", LastTransitionTime: metav1.Now(), ObservedGeneration: l.Generation}}}
		g.Expect(e.c.Status().Update(ctx, l)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func() float64 { return awaitingGauge(t, name) }).WithTimeout(30 * time.Second).Should(Equal(1.0))

	layer := e.layer(g, name)
	g.Expect(e.c.Patch(ctx, layer, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hold":false}}`)))).To(Succeed())
	written := layer.ResourceVersion
	// Nothing happens, so there is nothing to wait for: the layer is watched
	// for a while, long against the operator's reaction to a spec change
	// (milliseconds here).
	g.Consistently(func(g Gomega) {
		l := e.layer(g, name)
		g.Expect(l.ResourceVersion).To(Equal(written), "the operator wrote to a layer Kraan still owns: %+v", l.Status)
		err := e.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a layer Kraan still owns was applied")
	}).WithTimeout(3 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	g.Expect(e.c.Patch(ctx, layer, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+kraanv1.TakeOverAnnotation+`":"2026-12-03T00:00:00Z"}}}`)))).To(Succeed())
	// Kraan's status already says Deployed: the operator's Ready is the sign.
	var l *kraanv1.AddonsLayer
	g.Eventually(func(g Gomega) {
		l = e.layer(g, name)
		g.Expect(conditionStatus(l, kraanv1.ReadyCondition)).To(Equal(metav1.ConditionTrue), "layer %s: %s", name, layerReadyMessage(l))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(l.Status.State).To(Equal(kraanv1.DeployedState))
	g.Expect(l.Finalizers).To(Equal([]string{kraanv1.Finalizer}))
	g.Expect(e.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{})).To(Succeed())
	_, reported := awaitingSeries(t, name)
	g.Expect(reported).To(BeFalse(), "a layer taken over is still reported as awaiting")
}
