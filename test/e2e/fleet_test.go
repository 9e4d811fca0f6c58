package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// fleetNamespace is the platform namespace clusters are registered in.
const fleetNamespace = "fleet"

// workloadPlane is a cluster layers are placed on.
type workloadPlane struct {
	name   string
	labels map[string]string
	cfg    *rest.Config
	c      client.Client
	stop   func() error
}

// startWorkloadPlanes starts the canary, a whole local plane (its layer
// test Jobs run: kube-controller-manager fails them), and n planes of
// kube-apiserver and etcd only, which need no pods.
func startWorkloadPlanes(t *testing.T, n int) []*workloadPlane {
	g := NewWithT(t)
	planes := make([]*workloadPlane, n+1)
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	wg.Go(func() {
		p, err := localplane.Start(t.Context(), localplane.Options{Dir: filepath.Join(t.TempDir(), "canary")})
		if err != nil {
			errs[0] = err
			return
		}
		t.Cleanup(func() { _ = p.Stop() })
		planes[0] = &workloadPlane{name: "canary", cfg: p.RESTConfig(), stop: p.Stop,
			labels: map[string]string{"env": "test", "ring": "canary", "edge": "true"}}
	})
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			env := &envtest.Environment{}
			cfg, err := env.Start()
			if err != nil {
				errs[i] = err
				return
			}
			t.Cleanup(func() { _ = env.Stop() })
			labels := map[string]string{"env": "test", "ring": "main"}
			if i <= 2 {
				labels["edge"] = "true"
			}
			planes[i] = &workloadPlane{name: fmt.Sprintf("w%d", i), cfg: cfg, stop: env.Stop, labels: labels}
		})
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, p := range planes {
		c, err := client.New(p.cfg, client.Options{Scheme: testenv.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		p.c = c
	}
	return planes
}

// inlineKubeconfig is cfg as a kubeconfig the operator accepts.
func inlineKubeconfig(g Gomega, cfg *rest.Config) []byte {
	data, err := testenv.InlineKubeconfig(cfg, nil)
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

// register creates the plane's kubeconfig Secret and FleetCluster in ns.
func (h *harness) register(ns string, p *workloadPlane) {
	g := NewWithT(h.t)
	g.Expect(testenv.RegisterCluster(h.t.Context(), h.c, ns, p.name, p.labels, inlineKubeconfig(g, p.cfg))).To(Succeed())
}

// capiClusterCRD is enough of Cluster API's Cluster for the operator to
// list it by label.
func capiClusterCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clusters.cluster.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cluster.x-k8s.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusters", Singular: "cluster", Kind: "Cluster", ListKind: "ClusterList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

// fleetFiles are the four placed layers' directories; app's ConfigMaps say
// its version, and version-only objects show what is pruned.
func fleetFiles(appVersion string, appTest string) map[string]string {
	app := configMapWith("app", appVersion) + configMapWith("app-"+appVersion+"-only", appVersion) + appTest
	return map[string]string{
		"fleet/base/all.yaml": namespace("fleet-apps") + configMapWith("base", "v1"),
		"fleet/mid/all.yaml":  configMapWith("mid", "v1"),
		"fleet/app/all.yaml":  app,
		"fleet/edge/all.yaml": configMapWith("edge", "v1"),
		"fleet/capi/all.yaml": configMapWith("capi", "v1"),
	}
}

// configMapWith is a ConfigMap of fleet-apps whose data says value.
func configMapWith(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: fleet-apps\ndata:\n  version: %s\n---\n", name, value)
}

// passingTest is a layer test that passes at once (a ConfigMap is ready
// when it exists).
const passingTest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-check
  namespace: fleet-apps
  annotations:
    kraan.io/layer-test: "true"
data:
  check: ok
---
`

// failingFleetTest is a layer test Job that fails where a Job controller
// runs (the canary): its pod matches no node, and the Job's deadline is a
// second.
const failingFleetTest = `apiVersion: batch/v1
kind: Job
metadata:
  name: app-smoke
  namespace: fleet-apps
  annotations:
    kraan.io/layer-test: "true"
spec:
  backoffLimit: 0
  activeDeadlineSeconds: 1
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {kraan.io/never-scheduled: "true"}
      containers:
      - name: test
        image: curlimages/curl:8.11.0
        args: ["-fsS", "http://app.fleet-apps"]
---
`

// placedLayer creates a layer at version v1 placed on the clusters labelled selector.
func (h *harness) placedLayer(name string, selector map[string]string, placement func(*kraanv1.PlacementSpec), deps ...string) {
	l := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kraanv1.AddonsLayerSpec{
			Version:  "v1",
			Source:   kraanv1.SourceSpec{Name: repoName, Namespace: fluxNamespace, Path: "./fleet/" + name[len("fleet-"):]},
			Prereqs:  kraanv1.PrereqsSpec{DependsOn: deps},
			Interval: metav1.Duration{Duration: 5 * time.Second},
			Timeout:  metav1.Duration{Duration: 30 * time.Second},
			Placement: &kraanv1.PlacementSpec{
				ClusterSelector: metav1.LabelSelector{MatchLabels: selector},
			},
		},
	}
	if placement != nil {
		placement(l.Spec.Placement)
	}
	NewWithT(h.t).Expect(h.c.Create(h.t.Context(), l)).To(Succeed())
}

// valueOn is the version a ConfigMap of fleet-apps says on p, "" when absent.
func valueOn(g Gomega, ctx context.Context, p *workloadPlane, name string) string {
	cm := &corev1.ConfigMap{}
	err := p.c.Get(ctx, client.ObjectKey{Namespace: "fleet-apps", Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cm.Data["version"]
}

// entryOf is the layer's entry for cluster, zero when it has none.
func entryOf(l *kraanv1.AddonsLayer, cluster string) kraanv1.LayerClusterStatus {
	i := slices.IndexFunc(l.Status.Clusters, func(e kraanv1.LayerClusterStatus) bool { return e.Cluster == cluster })
	if i < 0 {
		return kraanv1.LayerClusterStatus{}
	}
	return l.Status.Clusters[i]
}

// waveWatch checks, on every status of a layer the watch delivers, that no
// cluster of wave main took version before the canary had it Deployed.
type waveWatch struct {
	mu         sync.Mutex
	violations []string
	seen       int
}

func (h *harness) watchWaves(ctx context.Context, layer string, versions ...string) *waveWatch {
	w := &waveWatch{}
	list := &kraanv1.AddonsLayerList{}
	watcher, err := h.c.Watch(ctx, list, &client.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", layer)})
	NewWithT(h.t).Expect(err).NotTo(HaveOccurred())
	go func() {
		defer watcher.Stop()
		for ev := range watcher.ResultChan() {
			l, ok := ev.Object.(*kraanv1.AddonsLayer)
			if !ok || ev.Type == watch.Error {
				continue
			}
			w.check(l, versions)
		}
	}()
	return w
}

func (w *waveWatch) check(l *kraanv1.AddonsLayer, versions []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen++
	canary := entryOf(l, fleetNamespace+"/canary")
	for _, e := range l.Status.Clusters {
		if e.Wave != "main" || !slices.Contains(versions, e.Version) {
			continue
		}
		if canary.DeployedVersion != e.Version {
			w.violations = append(w.violations, fmt.Sprintf("%s took %s (%s) while the canary had %s deployed (%s)",
				e.Cluster, e.Version, e.State, canary.DeployedVersion, canary.State))
		}
	}
}

func (w *waveWatch) result() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen, slices.Clone(w.violations)
}

// TestFleet_LayersOnManyClusters places four ordered layers on five
// workload planes from a management plane: by label, dependsOn per cluster,
// a new version in two waves past an unreachable cluster, and a failing
// layer test that stops the rollout in its first wave and rolls it back.
func TestFleet_LayersOnManyClusters(t *testing.T) {
	h := startHarnessWith(t, []string{fleetNamespace})
	g := NewWithT(t)
	ctx := t.Context()
	planes := startWorkloadPlanes(t, 4)
	g.Expect(h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}})).To(Succeed())
	g.Expect(h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}})).To(Succeed())
	for _, p := range planes {
		h.register(fleetNamespace, p)
	}
	// A tenant registers w1 again under labels every placement selects: it
	// is outside the platform's namespaces, so no layer ever places on it.
	sneaky := *planes[1]
	sneaky.name, sneaky.labels = "sneaky", map[string]string{"env": "test", "ring": "canary", "edge": "true"}
	h.register("tenant-a", &sneaky)

	rev1 := h.commit(fleetFiles("v1", ""))
	all := map[string]string{"env": "test"}
	waves := func(p *kraanv1.PlacementSpec) {
		p.RollbackOnFailure = true
		p.Waves = []kraanv1.WaveSpec{
			{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}, MaxInProgress: 1},
			{Name: "main", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "main"}}, MaxInProgress: 2},
		}
	}
	// Dependents first: each waits, per cluster, for what it depends on.
	h.placedLayer("fleet-app", all, waves, "fleet-mid@v1")
	h.placedLayer("fleet-edge", map[string]string{"edge": "true"}, nil, "fleet-base@v1")
	h.placedLayer("fleet-mid", all, nil, "fleet-base@v1")
	h.placedLayer("fleet-base", all, nil)

	t.Run("four layers placed by label, in order on each cluster", func(t *testing.T) {
		h := h.forTest(t)
		for _, name := range []string{"fleet-base", "fleet-mid", "fleet-app", "fleet-edge"} {
			want := 5
			if name == "fleet-edge" {
				want = 3
			}
			h.waitLayer(name, kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
				g.Expect(l.Status.Clusters).To(HaveLen(want))
				for _, e := range l.Status.Clusters {
					g.Expect(e.Cluster).NotTo(HavePrefix("tenant-a/"))
					g.Expect(e.DeployedVersion).To(Equal("v1"))
					g.Expect(e.DeployedRevision).To(Equal(rev1))
				}
				g.Expect(l.Status.Rollout.Phase).To(Equal(kraanv1.RolloutComplete))
			})
		}
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			fc := &kraanv1.FleetCluster{}
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: fleetNamespace, Name: "canary"}, fc)).To(Succeed())
			g.Expect(fc.Status.KubernetesVersion).To(HavePrefix("v1."))
			g.Expect(fc.Status.Conditions).To(ContainElement(And(
				HaveField("Type", kraanv1.ReadyCondition), HaveField("Status", metav1.ConditionTrue))))
		}).WithTimeout(time.Minute).Should(Succeed())
		// The tenant's registration is never read: not cached, no status.
		sneakyFC := &kraanv1.FleetCluster{}
		g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "sneaky"}, sneakyFC)).To(Succeed())
		g.Expect(sneakyFC.Status.Conditions).To(BeEmpty())
		for _, p := range planes {
			for _, cm := range []string{"base", "mid", "app", "app-v1-only"} {
				g.Expect(valueOn(g, ctx, p, cm)).To(Equal("v1"), "%s on %s", cm, p.name)
			}
			wantEdge := ""
			if p.labels["edge"] == "true" {
				wantEdge = "v1"
			}
			g.Expect(valueOn(g, ctx, p, "edge")).To(Equal(wantEdge), "edge on %s", p.name)
			// dependsOn per cluster: a dependent's objects came after its
			// dependency's on that cluster.
			base, mid, app := &corev1.ConfigMap{}, &corev1.ConfigMap{}, &corev1.ConfigMap{}
			g.Expect(p.c.Get(ctx, client.ObjectKey{Namespace: "fleet-apps", Name: "base"}, base)).To(Succeed())
			g.Expect(p.c.Get(ctx, client.ObjectKey{Namespace: "fleet-apps", Name: "mid"}, mid)).To(Succeed())
			g.Expect(p.c.Get(ctx, client.ObjectKey{Namespace: "fleet-apps", Name: "app"}, app)).To(Succeed())
			g.Expect(mid.CreationTimestamp.Before(&base.CreationTimestamp)).To(BeFalse(), p.name)
			g.Expect(app.CreationTimestamp.Before(&mid.CreationTimestamp)).To(BeFalse(), p.name)
			g.Expect(app.Labels).To(HaveKeyWithValue(manifest.LayerLabel, "fleet-app"))
		}
	})

	t.Run("a new version in two waves past an unreachable cluster", func(t *testing.T) {
		h := h.forTest(t)
		g := NewWithT(t)
		gone := planes[4]
		g.Expect(gone.stop()).To(Succeed())
		waves := h.watchWaves(ctx, "fleet-app", "v2", "v3")
		rev2 := h.commit(fleetFiles("v2", passingTest))
		h.updateLayer("fleet-app", func(l *kraanv1.AddonsLayer) {
			l.Spec.Version = "v2"
			l.Spec.Prereqs.DependsOn = []string{"fleet-mid@v1"}
		})
		l := h.waitLayer("fleet-app", kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
			g.Expect(l.Status.Rollout.Version).To(Equal("v2"))
			g.Expect(l.Status.Rollout.Phase).To(Equal(kraanv1.RolloutComplete))
			for _, p := range planes[:4] {
				e := entryOf(l, fleetNamespace+"/"+p.name)
				g.Expect(e.State).To(Equal(kraanv1.DeployedState), "%s: %s", p.name, e.Message)
				g.Expect(e.DeployedVersion).To(Equal("v2"))
				g.Expect(e.DeployedRevision).To(Equal(rev2))
			}
			e := entryOf(l, fleetNamespace+"/"+gone.name)
			g.Expect(e.State).To(Equal(kraanv1.UnreachableState))
		})
		g.Expect(cond(l, kraanv1.ReadyCondition).Reason).To(Equal(kraanv1.ReasonClusterUnreachable))
		g.Expect(cond(l, kraanv1.ReadyCondition).Message).To(ContainSubstring(fleetNamespace + "/w4"))
		for _, p := range planes[:4] {
			g.Eventually(func(g Gomega) {
				g.Expect(valueOn(g, ctx, p, "app")).To(Equal("v2"))
				g.Expect(valueOn(g, ctx, p, "app-v2-only")).To(Equal("v2"))
				g.Expect(valueOn(g, ctx, p, "app-v1-only")).To(BeEmpty(), "v1's object is pruned on %s", p.name)
			}).WithTimeout(time.Minute).Should(Succeed())
		}
		seen, violations := waves.result()
		g.Expect(violations).To(BeEmpty())
		g.Expect(seen).To(BeNumerically(">", 1))
		t.Logf("fleet-app v2 rolled out: %d status changes watched, the canary first; %s", seen, l.Status.Rollout.Message)
	})

	t.Run("a failing layer test stops wave main and rolls the canary back", func(t *testing.T) {
		h := h.forTest(t)
		g := NewWithT(t)
		waves := h.watchWaves(ctx, "fleet-app", "v3")
		h.commit(fleetFiles("v3", failingFleetTest))
		h.updateLayer("fleet-app", func(l *kraanv1.AddonsLayer) { l.Spec.Version = "v3" })
		l := h.waitLayer("fleet-app", kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
			g.Expect(l.Status.Rollout.Version).To(Equal("v3"))
			g.Expect(l.Status.Rollout.Phase).To(Equal(kraanv1.RolloutRolledBack))
			for _, p := range planes[:4] {
				e := entryOf(l, fleetNamespace+"/"+p.name)
				g.Expect(e.State).To(Equal(kraanv1.DeployedState), "%s: %s", p.name, e.Message)
				g.Expect(e.DeployedVersion).To(Equal("v2"))
				g.Expect(e.Version).To(Equal("v2"))
			}
		})
		g.Expect(cond(l, kraanv1.ReadyCondition).Reason).To(Equal(kraanv1.ReasonRolledBack))
		g.Expect(l.Status.Rollout.Message).To(ContainSubstring("layer test Job fleet-apps/app-smoke failed"))
		g.Expect(l.Status.Rollout.Wave).To(Equal("canary"))
		h.expectEvent("fleet-app", corev1.EventTypeWarning, kraanv1.ReasonLayerTestFailed, "cluster fleet/canary")
		for _, p := range planes[:4] {
			g.Eventually(func(g Gomega) {
				g.Expect(valueOn(g, ctx, p, "app")).To(Equal("v2"), p.name)
				g.Expect(valueOn(g, ctx, p, "app-v3-only")).To(BeEmpty(), "v3's object is pruned on %s", p.name)
			}).WithTimeout(time.Minute).Should(Succeed())
		}
		_, violations := waves.result()
		g.Expect(violations).To(BeEmpty(), "wave main never took v3")
	})

	t.Run("a Cluster API Cluster is a cluster too", func(t *testing.T) {
		h := h.forTest(t)
		g := NewWithT(t)
		_, err := envtest.InstallCRDs(h.cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{capiClusterCRD()}})
		g.Expect(err).NotTo(HaveOccurred())
		target := planes[3]
		g.Expect(h.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: "capi-w3-kubeconfig"},
			Data: map[string][]byte{"value": inlineKubeconfig(g, target.cfg)}})).To(Succeed())
		cluster := &unstructured.Unstructured{}
		cluster.SetAPIVersion("cluster.x-k8s.io/v1beta1")
		cluster.SetKind("Cluster")
		cluster.SetNamespace(fleetNamespace)
		cluster.SetName("capi-w3")
		cluster.SetLabels(map[string]string{"provisioner": "capi"})
		g.Expect(h.c.Create(ctx, cluster)).To(Succeed())
		h.placedLayer("fleet-capi", map[string]string{"provisioner": "capi"}, nil)
		h.waitLayer("fleet-capi", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
			g.Expect(l.Status.Clusters).To(HaveLen(1))
			g.Expect(l.Status.Clusters[0].Cluster).To(Equal(fleetNamespace + "/capi-w3"))
		})
		g.Expect(valueOn(g, ctx, target, "capi")).To(Equal("v1"))
	})

	t.Run("kubectl kraan fleet shows layer × cluster", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		cmd := plugin.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		cmd.SetArgs([]string{"fleet", "--kubeconfig", h.kubeconfig, "--color", "never"})
		g.Expect(cmd.ExecuteContext(ctx)).To(Succeed(), out.String())
		t.Log("\n" + out.String())
		g.Expect(out.String()).To(MatchRegexp(`(?m)^CLUSTER\s+fleet-app\s+fleet-base\s+fleet-capi\s+fleet-edge\s+fleet-mid$`))
		g.Expect(out.String()).To(MatchRegexp(`(?m)^fleet/canary\s+v2 Deployed\s+v1 Deployed\s+-\s+v1 Deployed\s+v1 Deployed$`))
		g.Expect(out.String()).To(MatchRegexp(`(?m)^fleet/w3\s+v2 Deployed\s+v1 Deployed\s+-\s+-\s+v1 Deployed$`))
		g.Expect(out.String()).To(MatchRegexp(`(?m)^fleet/capi-w3\s+-\s+-\s+v1 Deployed\s+-\s+-$`))
		g.Expect(out.String()).To(MatchRegexp(`(?m)^fleet/w4\s+v1 Unreachable`))
		g.Expect(out.String()).To(MatchRegexp(`(?m)^fleet-app\s+v3\s+RolledBack\s+canary\s+version v3 failed`))
	})
}
