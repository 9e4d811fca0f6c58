package plugin_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/plugin"
)

// snapshot is what must not change when the plugin diffs: the Helm release
// records and the resourceVersion of every object involved.
type snapshot struct {
	helmRecords []string
	versions    map[string]string
}

func takeSnapshot(t *testing.T, objs ...client.Object) snapshot {
	t.Helper()
	g := NewWithT(t)
	secrets := &corev1.SecretList{}
	g.Expect(e.Client.List(t.Context(), secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	s := snapshot{versions: map[string]string{}}
	for _, sec := range secrets.Items {
		s.helmRecords = append(s.helmRecords, sec.Name+"@"+sec.ResourceVersion)
	}
	for _, o := range objs {
		g.Expect(e.Client.Get(t.Context(), client.ObjectKeyFromObject(o), o)).To(Succeed())
		s.versions[o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return s
}

func object(kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	if kind == "AddonsLayer" || kind == "HelmRelease" {
		u.SetAPIVersion(kraanv1.GroupVersion.String())
	}
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func testDiffLayerInSyncExitsZero(t *testing.T) {
	r := kraan(t, "diff", "layer", "top")
	NewWithT(t).Expect(r.code).To(Equal(plugin.ExitOK), r.stdout+r.stderr)
	NewWithT(t).Expect(r.stdout).To(BeEmpty())
}

// TestDiff_Layer_ChangedRemovedAndSecret holds layer top, commits a change
// to a value, a removed ConfigMap and a new Secret value, and diffs the
// source's artifact, then the same change as a --local directory.
func testDiffLayerChangedRemovedAndSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	top := layerOf(t, "top")
	top.Spec.Hold = true
	g.Expect(e.Client.Update(ctx, top)).To(Succeed())
	g.Eventually(func() string { return layerOf(t, "top").Status.State }, time.Minute).Should(Equal(kraanv1.HoldState))

	changed := t.TempDir()
	g.Expect(os.CopyFS(changed, os.DirFS("testdata/layers"))).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(changed, "top", "objects.yaml"), []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: top-settings
  namespace: plug
data:
  mode: green
---
apiVersion: v1
kind: Secret
metadata:
  name: top-credentials
  namespace: plug
stringData:
  token: second-token-value
`), 0o600)).To(Succeed())
	_, err := e.Commit(ctx, "layers: top changes", map[string]string{"layers": changed})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() {
		_, err := e.Commit(ctx, "layers 0.1.0 again", map[string]string{"layers": "testdata/layers"})
		g.Expect(err).NotTo(HaveOccurred())
		top := layerOf(t, "top")
		top.Spec.Hold = false
		g.Expect(e.Client.Update(ctx, top)).To(Succeed())
		g.Expect(waitDeployed(ctx, "top")).To(Succeed())
	}()

	watched := []client.Object{object("ConfigMap", ns, "top-settings"), object("ConfigMap", ns, "top-extra"),
		object("Secret", ns, "top-credentials"), object("AddonsLayer", "", "top")}
	before := takeSnapshot(t, watched...)

	r := kraan(t, "diff", "layer", "top")
	g.Expect(r.code).To(Equal(plugin.ExitDifferent), r.stderr)
	expectGolden(t, "diff-layer-top.txt", r.stdout)
	g.Expect(r.stdout).NotTo(ContainSubstring("second-token-value"))
	g.Expect(r.stdout).NotTo(ContainSubstring("first-token-value"))

	local := kraan(t, "diff", "layer", "top", "--local", filepath.Join(changed, "top"))
	g.Expect(local.code).To(Equal(plugin.ExitDifferent), local.stderr)
	g.Expect(local.stdout).To(Equal(r.stdout), "the working copy is the same change")

	g.Expect(takeSnapshot(t, watched...)).To(Equal(before), "diff changed nothing in the cluster")
}

// TestDiff_HelmRelease_ValueChartVersionAndRemovedObject suspends the
// release, publishes chart 0.2.0 and changes its valuesFrom ConfigMap (a new
// message, the extra ConfigMap turned off, a new password), and diffs.
func testDiffHelmReleaseValueChartVersionAndRemovedObject(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	r := kraan(t, "diff", "helmrelease", "-n", ns, releaseName)
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stdout+r.stderr)

	g.Expect(kraan(t, "suspend", "hr", "-n", ns, releaseName).code).To(Equal(plugin.ExitOK))
	defer resumeAndReconcile(t)
	g.Expect(e.AddChart(chartDir, "0.2.0")).To(Succeed())
	values := &corev1.ConfigMap{}
	g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-values"}, values)).To(Succeed())
	values.Data["values.yaml"] = "message: goodbye\nextra: false\npassword: s3cret-two\n"
	g.Expect(e.Client.Update(ctx, values)).To(Succeed())

	watched := []client.Object{object("ConfigMap", ns, "app-settings"), object("ConfigMap", ns, "app-extra"),
		object("Secret", ns, "app-credentials"), object("HelmRelease", ns, releaseName)}
	before := takeSnapshot(t, watched...)

	r = kraan(t, "diff", "helmrelease", "-n", ns, releaseName)
	g.Expect(r.code).To(Equal(plugin.ExitDifferent), r.stderr)
	expectGolden(t, "diff-helmrelease.txt", r.stdout)
	g.Expect(r.stdout).NotTo(ContainSubstring("s3cret"))

	local := kraan(t, "diff", "helmrelease", "-n", ns, releaseName, "--local", chartDir)
	g.Expect(local.code).To(Equal(plugin.ExitDifferent), local.stderr)
	g.Expect(local.stdout).To(ContainSubstring("-  message: hello\n+  message: goodbye"))

	g.Expect(takeSnapshot(t, watched...)).To(Equal(before), "diff changed nothing in the cluster: no new Helm revision, no object modified")
}

// resumeAndReconcile restores the values, resumes the release and runs
// `kubectl kraan reconcile`, which must wait until the operator handled the
// request and report Ready. (Whether the operator already upgrades to 0.2.0
// depends on its index cache, DefaultIndexTTL.)
func resumeAndReconcile(t *testing.T) {
	g := NewWithT(t)
	values := &corev1.ConfigMap{}
	g.Expect(e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-values"}, values)).To(Succeed())
	values.Data["values.yaml"] = "message: hello\n"
	g.Expect(e.Client.Update(t.Context(), values)).To(Succeed())
	g.Expect(kraan(t, "resume", "hr", "-n", ns, releaseName).code).To(Equal(plugin.ExitOK))
	r := kraan(t, "reconcile", "hr", "-n", ns, releaseName, "--timeout", "2m")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(r.stdout).To(Equal("✔ HelmRelease plug/app is Ready\n"))
	hr := &kraanv1.HelmRelease{}
	g.Expect(e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: releaseName}, hr)).To(Succeed())
	g.Expect(hr.Status.LastHandledReconcileAt).To(Equal(hr.Annotations["reconcile.fluxcd.io/requestedAt"]),
		"reconcile waited for the operator to handle its request")
}
