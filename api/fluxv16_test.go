package api_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// fluxV16Release is a HelmRelease as Flux helm-controller v1.6 documents
// it, setting every field v1.5 and v1.6 added.
const fluxV16Release = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo-v16, namespace: default}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: '6.5.*'
      sourceRef: {kind: HelmRepository, name: podinfo}
  waitStrategy:
    name: poller
  healthCheckExprs:
    - apiVersion: cert-manager.io/v1
      kind: Certificate
      current: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')
      failed: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')
    - apiVersion: example.com/v1
      current: status.phase == 'Ready'
      inProgress: status.phase == 'Pending'
  postRenderStrategy: separate
  install:
    serverSideApply: false
  upgrade:
    serverSideApply: auto
    chartNameChangeStrategy: InPlaceUpdate
  rollback:
    serverSideApply: enabled
`

// TestHelmRelease_AcceptsFluxV16Fields converts a Flux v1.6 HelmRelease as a
// layer does, creates it, and reads every new field back as written: the
// API server neither refuses nor prunes any of them.
func TestHelmRelease_AcceptsFluxV16Fields(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	got := convertAndCreate(t, fluxV16Release)
	spec := got.Spec
	g.Expect(spec.WaitStrategy).To(Equal(&kraanv1.WaitStrategy{Name: kraanv1.WaitStrategyPoller}))
	g.Expect(spec.PostRenderStrategy).To(Equal(kraanv1.PostRenderStrategySeparate))
	g.Expect(spec.HealthCheckExprs).To(Equal([]kraanv1.CustomHealthCheck{
		{APIVersion: "cert-manager.io/v1", Kind: "Certificate",
			Current: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
			Failed:  "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"},
		{APIVersion: "example.com/v1", Current: "status.phase == 'Ready'", InProgress: "status.phase == 'Pending'"},
	}))
	g.Expect(spec.Install.ServerSideApply).To(Equal(ptr.To(false)))
	g.Expect(spec.Upgrade.ServerSideApply).To(Equal(kraanv1.ServerSideApplyAuto))
	g.Expect(spec.Upgrade.ChartNameChangeStrategy).To(Equal(kraanv1.ChartNameChangeStrategyInPlaceUpdate))
	g.Expect(spec.Rollback.ServerSideApply).To(Equal(kraanv1.ServerSideApplyEnabled))
	// Defaults that depend on UseHelm3Defaults are the operator's to
	// resolve (internal/defaults), so the API server must not fill them in.
	bare := mustDecode(t, validRelease)
	bare.SetName("podinfo-bare")
	g.Expect(env.Client.Create(ctx, bare)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, bare) })
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(bare), got)).To(Succeed())
	g.Expect(got.Spec.WaitStrategy).To(BeNil())
	g.Expect(got.Spec.PostRenderStrategy).To(BeEmpty())
}

// convertAndCreate converts a Flux HelmRelease as a layer does, checks the
// spec came through unchanged, creates it and returns it as the API server
// stored it.
func convertAndCreate(t *testing.T, doc string) *kraanv1.HelmRelease {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	flux := mustDecode(t, doc)
	converted, err := manifest.ConvertHelmRelease(flux)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(converted.Object["spec"]).To(Equal(flux.Object["spec"]), "conversion changed the spec")
	g.Expect(env.Client.Create(ctx, converted)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, converted) })
	got := &kraanv1.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(converted), got)).To(Succeed())
	return got
}

// TestHelmRelease_StatusKeepsFluxV16Fields writes status.inventory,
// history[].action and lastAttemptedReleaseActionDuration through the status
// subresource and reads them back: the schema has them, so they are not pruned.
func TestHelmRelease_StatusKeepsFluxV16Fields(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := mustDecode(t, validRelease)
	obj.SetName("podinfo-status")
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })

	hr := &kraanv1.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), hr)).To(Succeed())
	now := metav1.Now().Rfc3339Copy()
	hr.Status.Inventory = &kraanv1.ResourceInventory{Entries: []kraanv1.ResourceRef{
		{ID: "default_podinfo_apps_Deployment", Version: "v1"},
		{ID: "_podinfo-reader_rbac.authorization.k8s.io_ClusterRole", Version: "v1"},
	}}
	hr.Status.History = []kraanv1.Snapshot{{Name: "podinfo", Namespace: "default", Version: 2, Status: "deployed",
		Action: kraanv1.ReleaseActionRollback, ChartName: "podinfo", ChartVersion: "6.5.0",
		FirstDeployed: now, LastDeployed: now}}
	hr.Status.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: 1500_000_000}
	g.Expect(env.Client.Status().Update(ctx, hr)).To(Succeed())

	got := &kraanv1.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.Status.Inventory).To(Equal(hr.Status.Inventory))
	g.Expect(got.Status.History[0].Action).To(Equal(kraanv1.ReleaseActionRollback))
	g.Expect(got.Status.LastAttemptedReleaseActionDuration.Duration.String()).To(Equal("1.5s"))

	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(kraanv1.GroupVersion.WithKind("HelmRelease"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), raw)).To(Succeed())
	entries, _, _ := unstructured.NestedSlice(raw.Object, "status", "inventory", "entries")
	g.Expect(entries).To(ContainElement(map[string]any{"id": "default_podinfo_apps_Deployment", "v": "v1"}),
		"Flux's JSON names, so Flux tooling reads the inventory")
}
