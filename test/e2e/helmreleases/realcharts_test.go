package helmreleases_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// moduleDir downloads a Go module (or finds it in the module cache) and
// returns its directory: some projects ship their Helm chart in their Go
// module, which gives the tests the real chart, pinned, with no other
// download.
func moduleDir(t *testing.T, module, version string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = t.TempDir() // outside the project's module: no go.mod changes
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s (the chart fixture): %v: %s", module, version, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download %s@%s: %v %s", module, version, err, info.Error)
	}
	return info.Dir
}

// TestRealChart_MetricsServer installs the metrics-server chart as its
// project publishes it (sigs.k8s.io/metrics-server v0.8.0, chart 3.12.2),
// with a post-renderer, common metadata and drift detection, upgrades it and
// uninstalls it: namespaced and cluster-scoped objects, a PodDisruptionBudget
// and RBAC across namespaces, rendered from real templates.
func TestRealChart_MetricsServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	chartDir := filepath.Join(moduleDir(t, "sigs.k8s.io/metrics-server", "v0.8.0"), "charts", "metrics-server")
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartDir)
	g.Expect(k8s.Create(ctx, newHelmRepository(ns, "metrics", repo.URL))).To(Succeed())

	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-server", Namespace: ns},
		Spec: kraanv1.HelmReleaseSpec{
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart: "metrics-server", Version: "3.12.x",
				SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "metrics"},
			}},
			// Its APIService would point the cluster's aggregated metrics API at
			// pods kwok never runs, breaking discovery for everyone on the plane.
			Values: toJSON(map[string]any{"apiService": map[string]any{"create": false}, "podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 1}}),
			PostRenderers: []kraanv1.PostRenderer{{Kustomize: &kraanv1.KustomizePostRenderer{
				Images: []kraanv1.KustomizeImage{{Name: "registry.k8s.io/metrics-server/metrics-server", NewName: "mirror.example/metrics-server", NewTag: "v0.8.0"}},
			}}},
			CommonMetadata: &kraanv1.CommonMetadata{Labels: map[string]string{"platform.example/owner": "observability"}},
			DriftDetection: &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionEnabled},
		},
	}
	g.Expect(k8s.Create(ctx, hr)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), hr) })
	ready := readyAt(t, ns, "metrics-server")
	g.Expect(ready.Status.History[0].ChartVersion).To(Equal("3.12.2"))
	g.Expect(ready.Status.History[0].AppVersion).To(Equal("0.7.2"))

	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "metrics-server"}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("mirror.example/metrics-server:v0.8.0"))
	namespaced, cluster := client.ObjectKey{Namespace: ns, Name: "metrics-server"}, client.ObjectKey{Name: "system:metrics-server"}
	for obj, key := range map[client.Object]client.ObjectKey{
		d: namespaced, &corev1.Service{}: namespaced, &corev1.ServiceAccount{}: namespaced,
		&policyv1.PodDisruptionBudget{}: namespaced,
		&rbacv1.ClusterRole{}:           cluster, &rbacv1.ClusterRoleBinding{}: cluster,
	} {
		g.Expect(k8s.Get(ctx, key, obj)).To(Succeed(), "%T %s", obj, key)
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("platform.example/owner", "observability"), "%T %s", obj, key)
	}
	apiService := &unstructured.Unstructured{}
	apiService.SetAPIVersion("apiregistration.k8s.io/v1")
	apiService.SetKind("APIService")
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "v1beta1.metrics.k8s.io"}, apiService))).To(BeTrue())

	// An upgrade through values, then uninstall on delete, cluster-scoped
	// objects included.
	update(t, ns, "metrics-server", func(hr *kraanv1.HelmRelease) {
		hr.Spec.Values = toJSON(map[string]any{"apiService": map[string]any{"create": false}, "replicas": 2,
			"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 1}})
	})
	readyAt(t, ns, "metrics-server")
	g.Eventually(func(g Gomega) {
		g.Expect(helmRevisions(g, ns, "metrics-server")).To(ConsistOf("1=superseded", "2=deployed"))
		g.Expect(*deployment(g, ns, "metrics-server").Spec.Replicas).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	g.Expect(k8s.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKey{Name: "system:metrics-server"}, &rbacv1.ClusterRole{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ClusterRole outlived the release: %v", err)
		g.Expect(helmRevisions(g, ns, "metrics-server")).To(BeEmpty())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
