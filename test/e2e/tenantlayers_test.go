package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestLayers_Tenant plays a tenant who may write objects of one namespace
// only (issue #26) against layers read by the real source-controller: a
// label it sets claims nothing, and a Secret value the platform's layer
// holds never reaches what the tenant can read (conditions, events) or the
// operator's log and metrics.
func TestLayers_Tenant(t *testing.T) {
	h := startHarness(t)
	for _, tc := range []struct {
		name string
		run  func(*harness)
	}{
		{"a layer label set by a tenant neither blocks a layer nor lets it touch the tenant's objects", testTenantLabelIsNoClaim},
		{"a layer Secret with a map value reaches no condition, event, log line or metric", testLayerSecretMapNeverLeaks},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(h.forTest(t)) })
	}
}

func testTenantLabelIsNoClaim(h *harness) {
	g := NewWithT(h.t)
	ctx := h.t.Context()
	g.Expect(h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})).To(Succeed())
	h.createGitSource("tenancy", "tenancy")
	h.commitTo("tenancy", "tenancy", map[string]string{
		"addons/platform/all.yaml": configMapYAML("team-a", "policy", "platform"),
		"addons/other/all.yaml":    configMapYAML("default", "other-own", "other"),
	})
	h.addLayer("other", "tenancy")
	h.waitLayer("other", kraanv1.DeployedState, nil)

	claim := func(layer string) map[string]string {
		return map[string]string{manifest.LayerLabel: layer, manifest.KraanLayerLabel: layer}
	}
	// The platform's object, made first by the tenant and claimed for another layer…
	g.Expect(h.c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "policy", Labels: claim("other")},
		Data:       map[string]string{"value": "tenant"},
	})).To(Succeed())
	// …and the tenant's own objects, claimed for the platform's layer.
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "mine", Labels: claim("platform")},
		Data: map[string]string{"value": "mine"}}
	g.Expect(h.c.Create(ctx, mine)).To(Succeed())
	mineHR := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "mine", Labels: claim("platform"),
			Annotations: map[string]string{suspendedByHold: "true"}},
		Spec: kraanv1.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour}, Suspend: true,
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{Chart: "small",
				SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts", Namespace: fluxNamespace}}}},
	}
	g.Expect(h.c.Create(ctx, mineHR)).To(Succeed())

	h.addLayer("platform", "tenancy")
	h.logReady(h.waitLayer("platform", kraanv1.DeployedState, nil))
	g.Expect(h.configMapValue("team-a", "policy")).To(Equal("platform"), "the layer applied its object")
	// Hold then unhold: unhold resumes what hold suspended, by the
	// annotation the tenant forged on its own release; it must not.
	h.updateLayer("platform", func(l *kraanv1.AddonsLayer) { l.Spec.Hold = true })
	h.waitLayer("platform", kraanv1.HoldState, nil)
	h.updateLayer("platform", func(l *kraanv1.AddonsLayer) { l.Spec.Hold = false })
	h.waitLayer("platform", kraanv1.DeployedState, nil)

	// (The HelmRelease controller writes the release's status and finalizer:
	// its spec and metadata tell whether the layer touched it.)
	hr := &kraanv1.HelmRelease{}
	g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(mineHR), hr)).To(Succeed())
	g.Expect(hr.Spec.Suspend).To(BeTrue(), "the layer resumed the tenant's HelmRelease")
	g.Expect(hr.Annotations).To(HaveKeyWithValue(suspendedByHold, "true"))
	g.Expect(hr.Generation).To(Equal(mineHR.Generation), "the layer changed the tenant's HelmRelease")
	cm := &corev1.ConfigMap{}
	g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(mine), cm)).To(Succeed())
	g.Expect(cm.ResourceVersion).To(Equal(mine.ResourceVersion), "the operator changed the tenant's ConfigMap")
	g.Expect(h.layer(g, "other").Status.State).To(Equal(kraanv1.DeployedState))
}

func testLayerSecretMapNeverLeaks(h *harness) {
	g := NewWithT(h.t)
	password := fmt.Sprintf("canary-map-%016x", rand.Uint64())
	h.createGitSource("leaks", "leaks")
	h.commitTo("leaks", "leaks", map[string]string{
		"addons/leaks/all.yaml": namespace("leaks") + "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: leaks\n" +
			"stringData:\n  password: {\"password\": \"" + password + "\"}\n",
	})
	h.addLayer("leaks", "leaks")
	l := h.waitLayer("leaks", kraanv1.FailedState, nil)
	h.logReady(l)
	g.Expect(cond(l, kraanv1.ReadyCondition).Message).To(ContainSubstring("Secret leaks/db: invalid value at stringData.password: expected string"))
	h.expectEvent("leaks", corev1.EventTypeWarning, "ApplyFailed", "Secret leaks/db")

	for _, c := range h.layer(g, "leaks").Status.Conditions {
		g.Expect(c.Message).NotTo(ContainSubstring(password), "condition %s", c.Type)
	}
	events := &corev1.EventList{}
	g.Expect(h.c.List(h.t.Context(), events)).To(Succeed())
	for _, e := range events.Items {
		g.Expect(e.Message).NotTo(ContainSubstring(password), "event %s", e.Reason)
	}
	log, err := os.ReadFile(filepath.Join(h.dir, "operator.log"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).To(ContainSubstring("leaks"), "the operator's log was captured")
	g.Expect(string(log)).NotTo(ContainSubstring(password), "the operator's log")
	g.Expect(testenv.GatheredMetrics(h.t)).NotTo(ContainSubstring(password), "/metrics")
}
