package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
	"github.com/kraan-io/kraan-operator/test/env"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// The fleet benchmark's shape: a layer of fleetObjects ConfigMaps (and its
// Namespace) placed on fleetPlanes workload planes of kube-apiserver and
// etcd, in one wave.
const (
	fleetPlanes    = 10
	fleetObjects   = 20
	fleetNamespace = "fleet"
	fleetLayer     = "fleet-bench"
)

// fleetResult is what BenchmarkFleet measures; it is written to
// bin/bench/fleet.json.
type fleetResult struct {
	Planes  int `json:"planes"`
	Objects int `json:"objectsPerPlane"`
	// DirectSeconds is the layer's new version applied server-side to
	// every plane directly, 8 planes at a time, as the operator does.
	DirectSeconds float64 `json:"directSeconds"`
	// RolloutSeconds is the operator rolling the new version out: from
	// the spec change to a Complete rollout.
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// FirstSeconds is the first version's placement, connections included.
	FirstSeconds float64 `json:"firstSeconds"`
	// RSS of the operator with no cluster registered, and with every plane
	// registered and the layer on it, idle; the difference per cluster.
	IdleRSSMiB       float64 `json:"idleRSSMiB"`
	FleetRSSMiB      float64 `json:"fleetRSSMiB"`
	RSSPerClusterKiB float64 `json:"rssPerClusterKiB"`
	// WatchesPerCluster are the watches the operator holds open on a
	// workload plane (apiserver_longrunning_requests, verb WATCH, before
	// and after).
	WatchesPerCluster float64 `json:"watchesPerCluster"`
}

// BenchmarkFleet measures a layer version rolled across fleetPlanes planes
// by the operator binary, against the same objects applied to each plane
// directly, and what a registered cluster costs the operator.
func BenchmarkFleet(b *testing.B) {
	ctrl.SetLogger(logr.Discard()) // envtest's CRD installer logs through it
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	sc := os.Getenv("KRAAN_SOURCE_CONTROLLER")
	if sc == "" {
		b.Fatal("KRAAN_SOURCE_CONTROLLER is not set: run `make bench`")
	}
	dir := filepath.Join(root, "bin", "bench", "run", "fleet")
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	bin := buildOperator(ctx, b, root)
	mgmt := startPlane(ctx, b, dir)
	progressf("fleet: starting %d workload planes (kube-apiserver and etcd)", fleetPlanes)
	planes := startFleetPlanes(b)
	res := fleetResult{Planes: fleetPlanes, Objects: fleetObjects}

	progressf("fleet: the direct limit, version v2 applied to every plane")
	if _, err := applyToPlanes(ctx, planes, "v1"); err != nil {
		b.Fatal(err)
	}
	direct, err := applyToPlanes(ctx, planes, "v2")
	if err != nil {
		b.Fatal(err)
	}
	res.DirectSeconds = direct.Seconds()
	op := startFleetOperator(ctx, b, mgmt, sc, dir, bin)
	if err := measureFleetOperator(ctx, mgmt.client, op, planes, &res); err != nil {
		b.Fatal(err)
	}
	progressf("fleet: direct %.2fs, operator rollout %.2fs (x%.2f), first placement %.2fs; RSS idle %.1f MiB, with %d clusters %.1f MiB (%.0f KiB per cluster); watches per cluster %.0f",
		res.DirectSeconds, res.RolloutSeconds, res.RolloutSeconds/res.DirectSeconds, res.FirstSeconds,
		res.IdleRSSMiB, fleetPlanes, res.FleetRSSMiB, res.RSSPerClusterKiB, res.WatchesPerCluster)
	b.ReportMetric(res.RolloutSeconds, "rollout-s")
	b.ReportMetric(res.RolloutSeconds/res.DirectSeconds, "x-direct")
	b.ReportMetric(res.RSSPerClusterKiB, "rss-KiB/cluster")
	b.ReportMetric(res.WatchesPerCluster, "watches/cluster")
	data, err := yaml.Marshal(res)
	if err == nil {
		err = os.WriteFile(filepath.Join(root, "bin", "bench", "fleet.yaml"), data, 0o644)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// startFleetOperator starts the Git server, source-controller with the
// layer's two versions committed, and the operator binary, whose platform
// namespace is fleetNamespace.
func startFleetOperator(ctx context.Context, b *testing.B, mgmt *planeEnv, sc, dir, bin string) *operatorProcess {
	sources, err := env.StartSources(ctx, env.SourcesOptions{
		Dir: filepath.Join(dir, "sources"), SourceController: sc, Kubeconfig: mgmt.plane.Kubeconfig(), Client: mgmt.client,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sources.Stop() })
	if err := commitFleetLayer(ctx, sources, filepath.Join(dir, "layer")); err != nil {
		b.Fatal(err)
	}
	op, err := startOperator(ctx, bin, mgmt.plane.Kubeconfig(), dir, "operator-fleet", "--platform-namespaces="+fleetNamespace)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = op.stop() })
	if err := mgmt.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}); err != nil {
		b.Fatal(err)
	}
	return op
}

// measureFleetOperator registers the planes, places the layer, rolls v2
// out, and fills res with the times, memory and watches.
func measureFleetOperator(ctx context.Context, mgmt client.Client, op *operatorProcess, planes []fleetPlane, res *fleetResult) error {
	var err error
	if res.IdleRSSMiB, err = settledRSS(op); err != nil {
		return err
	}
	watchesBefore, err := longRunningWatches(ctx, planes[0])
	if err != nil {
		return err
	}
	for i, p := range planes {
		if err := registerPlane(ctx, mgmt, fmt.Sprintf("p%02d", i), p); err != nil {
			return err
		}
	}
	layer := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: fleetLayer},
		Spec: kraanv1.AddonsLayerSpec{Version: "v1",
			Source:   kraanv1.SourceSpec{Name: env.GitRepositoryName, Namespace: env.FluxNamespace, Path: "./fleet/v1"},
			Interval: metav1.Duration{Duration: 10 * time.Minute}, Timeout: metav1.Duration{Duration: 5 * time.Minute},
			Placement: &kraanv1.PlacementSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"bench": "fleet"}}},
		},
	}
	progressf("fleet: placing version v1 on %d planes", fleetPlanes)
	start := time.Now()
	if err := mgmt.Create(ctx, layer); err != nil {
		return err
	}
	if err := waitRollout(ctx, mgmt, "v1"); err != nil {
		return err
	}
	res.FirstSeconds = time.Since(start).Seconds()
	progressf("fleet: rolling version v2 out")
	start = time.Now()
	if err := setLayerVersion(ctx, mgmt, "v2"); err != nil {
		return err
	}
	if err := waitRollout(ctx, mgmt, "v2"); err != nil {
		return err
	}
	res.RolloutSeconds = time.Since(start).Seconds()
	if res.FleetRSSMiB, err = settledRSS(op); err != nil {
		return err
	}
	res.RSSPerClusterKiB = (res.FleetRSSMiB - res.IdleRSSMiB) * 1024 / fleetPlanes
	watchesAfter, err := longRunningWatches(ctx, planes[0])
	res.WatchesPerCluster = watchesAfter - watchesBefore
	return err
}

// buildOperator builds the operator binary as its image does.
func buildOperator(ctx context.Context, b *testing.B, root string) string {
	bin := filepath.Join(b.TempDir(), "kraan-operator")
	platform := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	if err := imagebuild.BuildBinary(ctx, root, platform, bin); err != nil {
		b.Fatal(err)
	}
	return bin
}

// fleetPlane is a workload plane.
type fleetPlane struct {
	client.Client
	cfg *rest.Config
}

// startFleetPlanes starts the workload planes, two at a time.
func startFleetPlanes(b *testing.B) []fleetPlane {
	planes := make([]fleetPlane, fleetPlanes)
	errs := make([]error, fleetPlanes)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 2)
	for i := range planes {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			e := &envtest.Environment{}
			cfg, err := e.Start()
			if err != nil {
				errs[i] = err
				return
			}
			b.Cleanup(func() { _ = e.Stop() })
			cfg.QPS = -1
			planes[i].cfg = cfg
			planes[i].Client, errs[i] = client.New(cfg, client.Options{Scheme: testenv.Scheme})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return planes
}

// fleetObjectsOf are the layer's objects at version, in namespace ns.
func fleetObjectsOf(ns, version string) []*unstructured.Unstructured {
	namespace := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns}}}
	out := make([]*unstructured.Unstructured, 0, 1+fleetObjects)
	out = append(out, namespace)
	for i := range fleetObjects {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i), "namespace": ns},
			"data":     map[string]any{"version": version, "payload": strings.Repeat("x", 512)}}})
	}
	return out
}

// applyToPlanes applies version's objects server-side to every plane, 8
// planes at a time (the operator's concurrentClusters), and returns how
// long it took.
func applyToPlanes(ctx context.Context, planes []fleetPlane, version string) (time.Duration, error) {
	start := time.Now()
	errs := make([]error, len(planes))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for i, c := range planes {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			for _, obj := range fleetObjectsOf("fleet-direct", version) {
				//nolint:staticcheck // unstructured objects have no apply configuration
				if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("bench"), client.ForceOwnership); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// commitFleetLayer commits the layer's two versions as ./fleet/v1 and ./fleet/v2.
func commitFleetLayer(ctx context.Context, sources *env.Sources, dir string) error {
	for _, v := range []string{"v1", "v2"} {
		var buf bytes.Buffer
		for _, obj := range fleetObjectsOf("fleet-bench", v) {
			data, err := yaml.Marshal(obj.Object)
			if err != nil {
				return err
			}
			buf.Write(data)
			buf.WriteString("---\n")
		}
		if err := os.MkdirAll(filepath.Join(dir, "fleet", v), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "fleet", v, "all.yaml"), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := sources.Commit(ctx, "fleet layer", map[string]string{".": dir})
	return err
}

// registerPlane creates the plane's kubeconfig Secret and FleetCluster.
func registerPlane(ctx context.Context, mgmt client.Client, name string, plane fleetPlane) error {
	data, err := testenv.InlineKubeconfig(plane.cfg, nil)
	if err != nil {
		return err
	}
	return testenv.RegisterCluster(ctx, mgmt, fleetNamespace, name, map[string]string{"bench": "fleet"}, data)
}

// setLayerVersion moves the layer to version, read from ./fleet/<version>.
func setLayerVersion(ctx context.Context, c client.Client, version string) error {
	l := &kraanv1.AddonsLayer{}
	if err := c.Get(ctx, client.ObjectKey{Name: fleetLayer}, l); err != nil {
		return err
	}
	l.Spec.Version, l.Spec.Source.Path = version, "./fleet/"+version
	return c.Update(ctx, l)
}

// waitRollout polls until the layer's rollout of version is Complete on
// every plane.
func waitRollout(ctx context.Context, c client.Client, version string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		l := &kraanv1.AddonsLayer{}
		if err := c.Get(ctx, client.ObjectKey{Name: fleetLayer}, l); err != nil {
			return err
		}
		r := l.Status.Rollout
		if r != nil && r.Version == version && r.Phase == kraanv1.RolloutComplete && l.Status.State == kraanv1.DeployedState {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("layer %s not rolled out at %s: %s %+v", fleetLayer, version, l.Status.State, r)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// settledRSS is the operator's resident memory after it has been idle a
// few seconds.
func settledRSS(op *operatorProcess) (float64, error) {
	time.Sleep(5 * time.Second) // the measurement window itself, not a wait for something
	_, rss, err := op.memoryMiB()
	return rss, err
}

// longRunningWatches is the WATCH requests the plane's kube-apiserver
// serves now (apiserver_longrunning_requests).
func longRunningWatches(ctx context.Context, plane fleetPlane) (float64, error) {
	cs, err := kubernetes.NewForConfig(plane.cfg)
	if err != nil {
		return 0, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			total += v
		}
	}
	return total, sc.Err()
}
