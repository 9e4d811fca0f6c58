package e2e

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
)

// suspendedByHold is the annotation hold puts on the HelmReleases it
// suspends (Kraan's, kept verbatim); unhold resumes only those.
const suspendedByHold = "kraan/suspended-by-hold"

// TestLayers_Prerequisites drives what stops a layer before it applies
// anything — hold, a too-high k8sVersion, a dependency cycle — and what
// releases it, on the real source-controller. The cases share one harness;
// each reads its own branch through its own GitRepository.
func TestLayers_Prerequisites(t *testing.T) {
	began := time.Now()
	h := startHarness(t)
	t.Logf("harness up in %v", time.Since(began).Round(time.Millisecond))
	for _, tc := range []struct {
		name string
		run  func(*harness)
	}{
		{"hold stops everything and suspends HelmReleases, unhold resumes", testHoldUnhold},
		{"a too-high k8sVersion waits until it is lowered", testK8sVersionTooHigh},
		{"a dependency cycle stalls both layers until it is broken", testDependencyCycle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			tc.run(h.forTest(t))
			t.Logf("took %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

func testHoldUnhold(h *harness) {
	g := NewWithT(h.t)
	h.createGitSource("hold", "hold")
	rev1 := h.commitTo("hold", "hold", map[string]string{
		"addons/hold/all.yaml": namespace("hold") + deployment("hold", "web") + helmRelease("hold", "podinfo") +
			configMapYAML("hold", "settings", "v1") + configMapYAML("hold", "dropped", "v1"),
	})
	h.addLayer("hold", "hold")
	h.waitLayer("hold", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(l.Status.Revision).To(Equal(rev1))
	})
	uid := h.webUID(g, "hold")

	// Hold: state Hold, not Ready, not Reconciling; the HelmRelease suspended.
	h.updateLayer("hold", func(l *kraanv1.AddonsLayer) { l.Spec.Hold = true })
	h.logReady(h.waitLayer("hold", kraanv1.HoldState, func(g Gomega, l *kraanv1.AddonsLayer) {
		ready := cond(l, kraanv1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal("OnHold"))
		g.Expect(ready.Message).To(ContainSubstring("on hold"))
		expectConditions(g, l, map[string]metav1.ConditionStatus{
			kraanv1.ReconcilingCondition: absent, kraanv1.StalledCondition: absent,
		})
	}))
	g.Eventually(func(g Gomega) { expectHeld(g, h.helmReleaseOf(g, "hold", "podinfo"), true) }).
		WithTimeout(30 * time.Second).Should(Succeed())
	h.expectEvent("hold", corev1.EventTypeNormal, "OnHold", "on hold")
	h.expectEvent("hold", corev1.EventTypeNormal, "Suspended", "Suspended 1 HelmRelease")

	// A new revision while held: a changed value, a new object and a removed
	// one. Nothing is applied, released or pruned, past the grace period (5s).
	rev2 := h.commitTo("hold", "hold", map[string]string{
		"addons/hold/all.yaml": namespace("hold") + deployment("hold", "web") + helmRelease("hold", "podinfo") +
			configMapYAML("hold", "settings", "v2") + configMapYAML("hold", "added", "v2"),
	})
	g.Consistently(func(g Gomega) {
		l := h.layer(g, "hold")
		g.Expect(l.Status.State).To(Equal(kraanv1.HoldState))
		g.Expect(l.Status.Revision).To(Equal(rev1))
		g.Expect(h.configMapValue("hold", "settings")).To(Equal("v1"))
		g.Expect(h.notFound(&corev1.ConfigMap{}, "hold", "added")).To(BeTrue(), "a held layer applied a new object")
		dropped := &corev1.ConfigMap{}
		g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: "hold", Name: "dropped"}, dropped)).To(Succeed(),
			"a held layer pruned an object")
		g.Expect(dropped.Annotations).NotTo(HaveKey(apply.ReleasedAtAnnotation), "a held layer released an object")
		expectHeld(g, h.helmReleaseOf(g, "hold", "podinfo"), true)
		g.Expect(h.webUID(g, "hold")).To(Equal(uid))
	}).WithTimeout(8 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	// Unhold: the HelmRelease is resumed and the held revision is applied.
	h.updateLayer("hold", func(l *kraanv1.AddonsLayer) { l.Spec.Hold = false })
	h.waitLayer("hold", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(l.Status.Revision).To(Equal(rev2))
		expectConditions(g, l, map[string]metav1.ConditionStatus{
			kraanv1.ReadyCondition: metav1.ConditionTrue, kraanv1.DeployedCondition: metav1.ConditionTrue,
		})
	})
	expectHeld(g, h.helmReleaseOf(g, "hold", "podinfo"), false)
	h.expectEvent("hold", corev1.EventTypeNormal, "Resumed", "Resumed 1 HelmRelease")
	g.Expect(h.configMapValue("hold", "settings")).To(Equal("v2"))
	g.Expect(h.configMapValue("hold", "added")).To(Equal("v2"))
	g.Expect(h.webUID(g, "hold")).To(Equal(uid), "unhold recreated the Deployment")
	g.Eventually(func() bool { return h.notFound(&corev1.ConfigMap{}, "hold", "dropped") }).
		WithTimeout(time.Minute).Should(BeTrue(), "the object removed while held was not pruned after unhold")
}

// expectHeld checks a HelmRelease is suspended by hold, or not suspended and
// not marked.
func expectHeld(g Gomega, hr *kraanv1.HelmRelease, held bool) {
	g.Expect(hr.Spec.Suspend).To(Equal(held), "HelmRelease %s/%s spec.suspend", hr.Namespace, hr.Name)
	if held {
		g.Expect(hr.Annotations).To(HaveKeyWithValue(suspendedByHold, "true"))
	} else {
		g.Expect(hr.Annotations).NotTo(HaveKey(suspendedByHold))
	}
}

func (h *harness) helmReleaseOf(g Gomega, ns, name string) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, hr)).To(Succeed())
	return hr
}

// webUID returns the UID of the Deployment ns/web: it changes only when the
// Deployment is deleted and created again.
func (h *harness) webUID(g Gomega, ns string) string {
	d := &appsv1.Deployment{}
	g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
	return string(d.UID)
}

func testK8sVersionTooHigh(h *harness) {
	g := NewWithT(h.t)
	disco, err := discovery.NewDiscoveryClientForConfig(h.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	server, err := disco.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	h.createGitSource("k8s", "k8s")
	h.commitTo("k8s", "k8s", map[string]string{"addons/k8s-future/all.yaml": configMapYAML("default", "k8s-gated", "v1")})

	h.addLayer("k8s-future", "k8s", withK8sVersion("v1.99"))
	h.logReady(h.waitLayer("k8s-future", kraanv1.K8sVersionState, func(g Gomega, l *kraanv1.AddonsLayer) {
		for _, t := range []string{kraanv1.ReadyCondition, kraanv1.PrerequisitesMetCondition} {
			c := cond(l, t)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), t)
			g.Expect(c.Reason).To(Equal("K8sVersionNotMet"), t)
			g.Expect(c.Message).To(And(ContainSubstring("requires v1.99"), ContainSubstring(server.GitVersion)), t)
		}
	}))
	h.expectEvent("k8s-future", corev1.EventTypeNormal, "K8sVersionNotMet", "requires v1.99")
	g.Expect(h.notFound(&corev1.ConfigMap{}, "default", "k8s-gated")).To(BeTrue(), "a layer waiting for K8sVersion applied its objects")

	// Lowered to the server's own major.minor, as a user would.
	h.updateLayer("k8s-future", func(l *kraanv1.AddonsLayer) {
		l.Spec.Prereqs.K8sVersion = fmt.Sprintf("v%s.%s", server.Major, server.Minor)
	})
	h.waitLayer("k8s-future", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(cond(l, kraanv1.PrerequisitesMetCondition).Status).To(Equal(metav1.ConditionTrue))
	})
	g.Expect(h.configMapValue("default", "k8s-gated")).To(Equal("v1"))
}

func testDependencyCycle(h *harness) {
	g := NewWithT(h.t)
	h.createGitSource("cycle", "cycle")
	h.commitTo("cycle", "cycle", map[string]string{
		"addons/cycle-a/all.yaml": configMapYAML("default", "cycle-a", "a"),
		"addons/cycle-b/all.yaml": configMapYAML("default", "cycle-b", "b"),
	})
	h.addLayer("cycle-a", "cycle", withDependsOn("cycle-b@0.1.0"))
	h.addLayer("cycle-b", "cycle", withDependsOn("cycle-a@0.1.0"))

	for name, cycle := range map[string]string{"cycle-a": "cycle-a → cycle-b → cycle-a", "cycle-b": "cycle-b → cycle-a → cycle-b"} {
		h.logReady(h.waitLayer(name, kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
			expectConditions(g, l, map[string]metav1.ConditionStatus{
				kraanv1.StalledCondition: metav1.ConditionTrue, kraanv1.ReadyCondition: metav1.ConditionFalse,
				kraanv1.ReconcilingCondition: absent, kraanv1.PrerequisitesMetCondition: metav1.ConditionFalse,
			})
			for _, t := range []string{kraanv1.ReadyCondition, kraanv1.StalledCondition} {
				g.Expect(cond(l, t).Reason).To(Equal("DependencyCycle"), t)
				g.Expect(cond(l, t).Message).To(ContainSubstring(cycle), t)
			}
			g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation), "a stalled layer has handled its generation")
		}))
		h.expectEvent(name, corev1.EventTypeWarning, "DependencyCycle", cycle)
		g.Expect(h.notFound(&corev1.ConfigMap{}, "default", name)).To(BeTrue(), "a layer in a cycle applied its objects")
	}

	// Breaking the cycle: b no longer needs a; b deploys, then a.
	since := time.Now()
	h.updateLayer("cycle-b", func(l *kraanv1.AddonsLayer) { l.Spec.Prereqs.DependsOn = nil })
	for _, name := range []string{"cycle-b", "cycle-a"} {
		h.waitLayer(name, kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
			g.Expect(cond(l, kraanv1.StalledCondition).Status).To(Equal(absent))
		})
		g.Expect(h.configMapValue("default", name)).To(Equal(name[len("cycle-"):]))
	}
	bDeployed, ok := h.recorder.first("cycle-b", kraanv1.DeployedState, "0.1.0", since)
	g.Expect(ok).To(BeTrue(), "no Deployed of cycle-b recorded")
	aStarted, ok := h.recorder.started("cycle-a", "0.1.0", since)
	g.Expect(ok).To(BeTrue(), "no start of cycle-a recorded")
	g.Expect(aStarted).NotTo(BeTemporally("<", bDeployed), "cycle-a started before its dependency cycle-b was Deployed")
}
