package addonslayer

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// testLabelIsNoClaim plays a tenant who may write objects in its namespace
// only. The platform's layer puts a ConfigMap into that namespace; the
// tenant creates it first, labelled for another (real) layer, to block the
// platform's layer, and labels objects of its own for the platform's layer,
// to have the operator touch them (suspend a HelmRelease on hold). The layer
// label proves nothing: ownership is the inventory of the layer, which only
// the operator writes.
func (e *layerEnv) testLabelIsNoClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}})).To(Succeed())
	e.setSource(t, "tenancy", map[string]string{
		"platform/cm.yaml": configMapYAML("tenant", "policy", "platform"),
		"other/cm.yaml":    configMapYAML("default", "other-own", "o"),
	}, false)
	e.createLayer(t, "tenancy-other", "tenancy", "other")
	e.waitState(t, "tenancy-other", kraanv1.DeployedState)

	claimedFor := func(layer string) map[string]string {
		return map[string]string{manifest.LayerLabel: layer, manifest.KraanLayerLabel: layer}
	}
	// The attack: the platform's object, made first and claimed for another layer…
	g.Expect(e.c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "policy", Labels: claimedFor("tenancy-other")},
		Data:       map[string]string{"value": "tenant"},
	})).To(Succeed())
	// …and the tenant's own objects, claimed for the platform's layer.
	mine := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "mine", Labels: claimedFor("tenancy-platform")},
		Data:       map[string]string{"value": "mine"},
	}
	g.Expect(e.c.Create(ctx, mine)).To(Succeed())
	mineHR := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "mine", Labels: claimedFor("tenancy-platform")},
		Spec: kraanv1.HelmReleaseSpec{Interval: metav1.Duration{Duration: 10 * time.Minute}, Chart: &kraanv1.HelmChartTemplate{
			Spec: kraanv1.HelmChartTemplateSpec{Chart: "podinfo", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo"}}}},
	}
	g.Expect(e.c.Create(ctx, mineHR)).To(Succeed())

	e.createLayer(t, "tenancy-platform", "tenancy", "platform")
	e.waitState(t, "tenancy-platform", kraanv1.DeployedState)
	policy := e.configMap(g, "tenant", "policy")
	g.Expect(policy.Labels).To(HaveKeyWithValue(manifest.LayerLabel, "tenancy-platform"))
	g.Expect(policy.Data["value"]).To(Equal("platform"), "the layer applied its object")

	// Hold suspends the layer's HelmReleases: none of the tenant's.
	e.setHold(g, "tenancy-platform", true)
	e.waitState(t, "tenancy-platform", kraanv1.HoldState)
	e.setHold(g, "tenancy-platform", false)
	e.waitState(t, "tenancy-platform", kraanv1.DeployedState)

	// Nothing of the tenant's was touched, and the other layer is unharmed.
	hr := e.helmRelease(g, "tenant", "mine")
	g.Expect(hr.ResourceVersion).To(Equal(mineHR.ResourceVersion), "the tenant's HelmRelease was changed")
	g.Expect(hr.Spec.Suspend).To(BeFalse())
	cm := &corev1.ConfigMap{}
	g.Expect(e.c.Get(ctx, types.NamespacedName{Namespace: "tenant", Name: "mine"}, cm)).To(Succeed())
	g.Expect(cm.ResourceVersion).To(Equal(mine.ResourceVersion), "the tenant's ConfigMap was changed")
	for _, name := range []string{"tenancy-platform", "tenancy-other"} {
		for _, res := range e.layer(g, name).Status.Resources {
			g.Expect(res.Name).NotTo(Equal("mine"), "layer %s took the tenant's object into its inventory", name)
		}
	}
	g.Expect(e.layer(g, "tenancy-other").Status.State).To(Equal(kraanv1.DeployedState))
}
