package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// The layers of Kraan's own example: bootstrap → base → mgmt, and apps
// needing both base and mgmt.
var layerDeps = map[string][]string{
	"bootstrap": nil,
	"base":      {"bootstrap"},
	"mgmt":      {"base"},
	"apps":      {"base", "mgmt"},
}

var layerOrder = []string{"apps", "mgmt", "base", "bootstrap"} // created dependents first, on purpose

func namespace(name string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n---\n"
}

func deployment(ns, name string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: web
        image: ghcr.io/stefanprodan/podinfo:6.7.0
---
`, ns, name)
}

func configMap(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  k: v\n---\n", name, ns)
}

// helmRelease is a Flux v2 HelmRelease, as Kraan users' repositories hold
// them; the operator converts it to a kraan.io HelmRelease.
func helmRelease(ns, name string) string {
	return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %s
  namespace: %s
spec:
  interval: 10m
  chart:
    spec:
      chart: small
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
---
`, name, ns)
}

// baseFiles is the repository at the start: every layer has a namespace and a
// Deployment; mgmt and apps a HelmRelease; bootstrap the add-on that moves.
func baseFiles() map[string]string {
	return map[string]string{
		"addons/bootstrap/all.yaml": namespace("bootstrap") + namespace("shared") + deployment("bootstrap", "core") +
			deployment("shared", "mover"),
		"addons/base/all.yaml":  namespace("base") + deployment("base", "web") + configMap("base", "extra"),
		"addons/mgmt/all.yaml":  namespace("mgmt") + deployment("mgmt", "web") + helmRelease("mgmt", "monitoring"),
		"addons/apps/all.yaml":  namespace("apps") + deployment("apps", "web") + helmRelease("apps", "podinfo"),
		"addons/empty/.gitkeep": "",
	}
}

func (h *harness) createLayer(name, version string, deps []string) {
	l := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kraanv1.AddonsLayerSpec{
			Version: version,
			Source:  kraanv1.SourceSpec{Name: repoName, Namespace: fluxNamespace, Path: "./addons/" + name},
			Prereqs: kraanv1.PrereqsSpec{K8sVersion: "v1.16"},
			// The grace period for hand-over; short so pruning shows within the test.
			Interval: metav1.Duration{Duration: 15 * time.Second},
			Timeout:  metav1.Duration{Duration: 2 * time.Minute},
		},
	}
	for _, d := range deps {
		l.Spec.Prereqs.DependsOn = append(l.Spec.Prereqs.DependsOn, d+"@"+version)
	}
	NewWithT(h.t).Expect(h.c.Create(h.t.Context(), l)).To(Succeed())
}

// waitDeployed waits until every named layer is Deployed at version and revision.
func (h *harness) waitDeployed(version, revision string, names ...string) {
	NewWithT(h.t).Eventually(func(g Gomega) {
		for _, name := range names {
			l := &kraanv1.AddonsLayer{}
			g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Name: name}, l)).To(Succeed())
			c := apimeta.FindStatusCondition(l.Status.Conditions, kraanv1.ReadyCondition)
			g.Expect(l.Status.State).To(Equal(kraanv1.DeployedState), "layer %s: %v", name, c)
			g.Expect(l.Status.Version).To(Equal(version))
			g.Expect(l.Status.Revision).To(Equal(revision))
			g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
		}
	}).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// assertOrder checks every dependent started only after its dependencies were
// Deployed at version, and logs the gap between the last dependency turning
// Deployed and the dependent starting. On a first deployment (created), the
// dependent starts when its first object (its Namespace) appears, and the gap
// must stay under a second: dependents are woken by a watch, not a requeue.
// Otherwise it starts when its status leaves ApplyPending, which includes the
// server-side dry runs of its objects, so the gap is only logged.
func (h *harness) assertOrder(version string, since time.Time, created bool) {
	g := NewWithT(h.t)
	for dependent, deps := range layerDeps {
		if len(deps) == 0 {
			continue
		}
		start, ok := h.recorder.started(dependent, version, since)
		if created {
			start, ok = h.recorder.first(dependent, firstObject, "", since)
		}
		g.Expect(ok).To(BeTrue(), "no start of %s@%s recorded", dependent, version)
		var lastDep time.Time
		for _, dep := range deps {
			done, ok := h.recorder.first(dep, kraanv1.DeployedState, version, since)
			g.Expect(ok).To(BeTrue(), "no Deployed of %s@%s recorded", dep, version)
			g.Expect(start).NotTo(BeTemporally("<", done), "%s started before its dependency %s was Deployed (Kraan #64)", dependent, dep)
			if done.After(lastDep) {
				lastDep = done
			}
		}
		gap := start.Sub(lastDep)
		h.t.Logf("GAP %s@%s started %v after its last dependency turned Deployed", dependent, version, gap.Round(time.Millisecond))
		if created {
			g.Expect(gap).To(BeNumerically("<", time.Second), "dependents must start within a second (event-driven)")
		}
	}
}

func (h *harness) deploymentUID(ns, name string) (string, error) {
	d := &appsv1.Deployment{}
	if err := h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return "", err
	}
	return string(d.UID) + "/" + d.Labels[manifest.LayerLabel], nil
}

func TestLayers_EndToEnd(t *testing.T) {
	began := time.Now()
	h := startHarness(t)
	t.Logf("harness up in %v", time.Since(began).Round(time.Millisecond))

	// 1. Bootstrap: layers created dependents first still deploy in order.
	since := time.Now()
	rev := h.commit(baseFiles())
	for _, name := range layerOrder {
		h.createLayer(name, "0.1.0", layerDeps[name])
	}
	h.createLayer("empty", "0.1.0", nil)
	h.waitDeployed("0.1.0", rev, "bootstrap", "base", "mgmt", "apps", "empty")
	h.assertOrder("0.1.0", since, true)
	g := NewWithT(t)
	empty := &kraanv1.AddonsLayer{}
	g.Expect(h.c.Get(t.Context(), client.ObjectKey{Name: "empty"}, empty)).To(Succeed())
	g.Expect(empty.Status.Resources).To(BeEmpty(), "an empty directory owns nothing")
	t.Logf("bootstrap of 4 layers took %v", time.Since(since).Round(time.Millisecond))

	// 2. Kraan #64: bump every layer's version, dependents first, while every
	// HelmRelease is deleted at once; dependents still wait.
	since = time.Now()
	for _, name := range layerOrder {
		h.bumpVersion(name, "0.2.0")
	}
	g.Expect(h.c.DeleteAllOf(t.Context(), &kraanv1.HelmRelease{}, client.InNamespace("mgmt"))).To(Succeed())
	g.Expect(h.c.DeleteAllOf(t.Context(), &kraanv1.HelmRelease{}, client.InNamespace("apps"))).To(Succeed())
	h.waitDeployed("0.2.0", rev, "bootstrap", "base", "mgmt", "apps")
	h.assertOrder("0.2.0", since, false)

	// 3. Hand-over and prune: mover goes from bootstrap to apps; base drops a ConfigMap.
	uid, err := h.deploymentUID("shared", "mover")
	g.Expect(err).NotTo(HaveOccurred())
	files := baseFiles()
	files["addons/bootstrap/all.yaml"] = namespace("bootstrap") + namespace("shared") + deployment("bootstrap", "core")
	files["addons/apps/all.yaml"] += deployment("shared", "mover")
	files["addons/base/all.yaml"] = namespace("base") + deployment("base", "web")
	removedAt := time.Now()
	rev = h.commit(files)
	h.waitDeployed("0.2.0", rev, "bootstrap", "base", "mgmt", "apps")
	g.Eventually(func() (string, error) { return h.deploymentUID("shared", "mover") }).
		WithTimeout(time.Minute).Should(Equal(uid[:len(uid)-len("bootstrap")] + "apps"))
	g.Eventually(func() bool {
		err := h.c.Get(t.Context(), client.ObjectKey{Namespace: "base", Name: "extra"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(time.Minute).Should(BeTrue())
	g.Expect(time.Since(removedAt)).To(BeNumerically(">=", 14*time.Second), "pruned before the grace period ended")
	got, err := h.deploymentUID("shared", "mover")
	g.Expect(err).NotTo(HaveOccurred(), "the moved add-on was pruned")
	g.Expect(got).To(Equal(uid[:len(uid)-len("bootstrap")] + "apps"))

	// 4. Malformed YAML: mgmt fails naming the file; what it deployed stays.
	broken := maps.Clone(files)
	broken["addons/mgmt/broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n"
	h.commit(broken)
	g.Eventually(func(g Gomega) {
		l := &kraanv1.AddonsLayer{}
		g.Expect(h.c.Get(t.Context(), client.ObjectKey{Name: "mgmt"}, l)).To(Succeed())
		g.Expect(l.Status.State).To(Equal(kraanv1.FailedState))
		c := apimeta.FindStatusCondition(l.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("addons/mgmt/broken.yaml"))
	}).WithTimeout(time.Minute).Should(Succeed())
	_, err = h.deploymentUID("mgmt", "web")
	g.Expect(err).NotTo(HaveOccurred(), "a malformed file must not remove what was deployed")
	t.Logf("e2e wall time %v", time.Since(began).Round(time.Millisecond))
}

func (h *harness) bumpVersion(name, version string) {
	NewWithT(h.t).Eventually(func(g Gomega) {
		l := &kraanv1.AddonsLayer{}
		g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Name: name}, l)).To(Succeed())
		l.Spec.Version = version
		for i, d := range l.Spec.Prereqs.DependsOn {
			dep, _, _ := strings.Cut(d, "@")
			l.Spec.Prereqs.DependsOn[i] = dep + "@" + version
		}
		g.Expect(h.c.Update(h.t.Context(), l)).To(Succeed())
	}).Should(Succeed())
}
