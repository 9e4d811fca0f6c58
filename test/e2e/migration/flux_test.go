package migration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// Deadlines of the polls. Flux installs six releases one after another
// where a dependency waits; the deadlines leave room for a loaded machine.
const (
	timeout  = 4 * time.Minute
	interval = 250 * time.Millisecond
)

// logTail is how many lines of a controller's log a failed test prints.
const logTail = 60

// startHelmController runs Flux helm-controller against the plane: every
// namespace, no leader election (it is alone), metrics and health on free
// loopback ports, and dependsOn re-checked every 2s instead of Flux's 30s,
// so the test waits for its dependency, not for a timer. It is stopped when
// the test ends unless the test stopped it first; a failed test prints the
// end of its log.
func startHelmController(t *testing.T) *localplane.Process {
	t.Helper()
	g := NewWithT(t)
	metrics, err := localplane.FreePort()
	g.Expect(err).NotTo(HaveOccurred())
	health, err := localplane.FreePort()
	g.Expect(err).NotTo(HaveOccurred())
	p, err := localplane.StartProcess(localplane.ProcessOptions{
		Name: "helm-controller", Dir: t.TempDir(), Binary: helmControllerBinary,
		Args: []string{"--watch-all-namespaces", "--enable-leader-election=false",
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metrics), fmt.Sprintf("--health-addr=127.0.0.1:%d", health),
			"--requeue-dependency=2s", "--log-level=debug", "--log-encoding=console"},
		Env: []string{"KUBECONFIG=" + kubeconfig}, // it has no --kubeconfig flag
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := p.Stop(stopGrace); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log("helm-controller's log:\n" + p.LogTail(logTail))
		}
	})
	return p
}

// sources serves the test charts over HTTP (small and realistic) and OCI
// (small), and creates the HelmRepositories "charts" and "oci" the YAML
// names, in namespace.
func sources(t *testing.T, namespace string) {
	t.Helper()
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"), chartrepo.ChartDir("realistic"))
	registry := chartrepo.NewOCIRegistry(t)
	registry.Push(chartrepo.ChartDir("small"))
	oci := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "oci", Namespace: namespace},
		Spec: sourcev1.HelmRepositorySpec{URL: registry.URL(), Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true,
			Interval: metav1.Duration{Duration: 10 * time.Minute}},
	}
	objs := []client.Object{
		&sourcev1.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: namespace},
			Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: 10 * time.Minute}},
		},
		oci,
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "app-values", Namespace: namespace},
			Data:       map[string]string{"values.yaml": "message: from a ConfigMap\nimage: registry.k8s.io/pause:3.9\n"},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "app-secret", Namespace: namespace},
			StringData: map[string]string{"message": "from a Secret"},
		},
	}
	for _, o := range objs {
		NewWithT(t).Expect(k8s.Create(context.Background(), o)).To(Succeed(), "%T %s", o, o.GetName())
	}
}

// fluxYAML is testdata/flux-releases.yaml for the namespaces: the Flux
// HelmReleases, unchanged otherwise.
func fluxYAML(t *testing.T, namespace, target string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "flux-releases.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return os.Expand(string(data), func(name string) string {
		return map[string]string{"NAMESPACE": namespace, "TARGET_NAMESPACE": target}[name]
	})
}

// decodeAll returns the objects of a YAML stream.
func decodeAll(t *testing.T, text string) []*unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
	g.Expect(objs).NotTo(BeEmpty())
	return objs
}

// fluxRelease is what Flux reports it deployed for one HelmRelease.
type fluxRelease struct {
	// name of the HelmRelease.
	name string
	// release names the Helm release: its name, storage namespace and the
	// revision Flux made last.
	release helmRelease
}

// waitFluxReady waits until every Flux HelmRelease of objs is Ready at its
// generation and returns what Flux deployed, in the order of objs.
func waitFluxReady(t *testing.T, objs []*unstructured.Unstructured) []fluxRelease {
	t.Helper()
	out := make([]fluxRelease, len(objs))
	NewWithT(t).Eventually(func(g Gomega) {
		for i, o := range objs {
			hr := &helmv2.HelmRelease{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(o), hr)).To(Succeed())
			ready := apimeta.FindStatusCondition(hr.Status.Conditions, "Ready")
			g.Expect(ready).NotTo(BeNil(), "Flux HelmRelease %s has no Ready condition", hr.Name)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Flux HelmRelease %s: %s", hr.Name, ready.Message)
			g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
			latest := hr.Status.History.Latest()
			g.Expect(latest).NotTo(BeNil())
			out[i] = fluxRelease{name: hr.Name, release: helmRelease{
				name: latest.Name, storageNamespace: hr.Status.StorageNamespace, version: latest.Version}}
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return out
}

// handOver is the hand-over docs/migrating-from-flux.md describes, Flux's
// half: suspend every Flux HelmRelease, then delete it while helm-controller
// runs. helm-controller lets a suspended HelmRelease go without uninstalling
// its release, removing its finalizer; it leaves the HelmChart it made
// behind, which is deleted too, since kraan-operator reads charts from the
// HelmRepository itself.
func handOver(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	for _, o := range objs {
		g.Eventually(func(g Gomega) {
			hr := &helmv2.HelmRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), hr)).To(Succeed())
			hr.Spec.Suspend = true
			g.Expect(k8s.Update(ctx, hr)).To(Succeed())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	}
	charts := make([]client.ObjectKey, 0, len(objs))
	for _, o := range objs {
		hr := &helmv2.HelmRelease{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), hr)).To(Succeed())
		chartNamespace, chartName, ok := strings.Cut(hr.Status.HelmChart, "/") // status.helmChart is <namespace>/<name>
		g.Expect(ok).To(BeTrue(), "Flux HelmRelease %s names no HelmChart: %q", hr.Name, hr.Status.HelmChart)
		charts = append(charts, client.ObjectKey{Namespace: chartNamespace, Name: chartName})
		g.Expect(k8s.Delete(ctx, hr)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, o := range objs {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(o), &helmv2.HelmRelease{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Flux HelmRelease %s still exists: %v", o.GetName(), err)
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	for _, key := range charts {
		chart := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		g.Expect(k8s.Delete(ctx, chart)).To(Succeed(), "the HelmChart %s that helm-controller left", key)
	}
}
