package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/bench/report"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/env"
)

// The chained layers, as in the soak: layer k+1 depends on layer k.
const (
	layerCount       = 4
	releasesPerLayer = 10
	layerVersion     = "0.1.0"
)

func benchLayerName(k int) string { return fmt.Sprintf("bench-l%d", k+1) }

func layerReleaseName(i int) string { return fmt.Sprintf("rel-%d", i) }

// measureLayers measures layerCount chained AddonsLayers of releasesPerLayer
// HelmReleases each, from Git through a real source-controller, on p's plane:
// first each layer's raw time (its releases' objects applied directly),
// then the operator deploying all the layers.
func measureLayers(ctx context.Context, p *planeEnv, bin string) (res report.Layers, err error) {
	res = report.Layers{Layers: layerCount, ReleasesPerLayer: releasesPerLayer}
	sc := os.Getenv("KRAAN_SOURCE_CONTROLLER")
	if sc == "" {
		return res, errors.New("KRAAN_SOURCE_CONTROLLER is not set: run `make bench`, which builds Flux source-controller and sets it")
	}
	sources, err := env.StartSources(ctx, env.SourcesOptions{
		Dir: filepath.Join(p.dir, "sources"), SourceController: sc, Kubeconfig: p.plane.Kubeconfig(), Client: p.client,
	})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, sources.Stop()) }()
	if err := sources.AddChart(chartrepo.ChartDir("small")); err != nil {
		return res, err
	}
	names := make([]string, releasesPerLayer)
	for i := range names {
		names[i] = layerReleaseName(i)
	}
	for k := range layerCount {
		progressf("  layers: raw limit of layer %d", k+1)
		ns := "raw-" + benchLayerName(k)
		objs, err := renderReleases(ns, names)
		if err != nil {
			return res, err
		}
		raw, err := applyRaw(ctx, p.client, ns, objs)
		if err != nil {
			return res, err
		}
		res.Each = append(res.Each, report.Layer{Name: benchLayerName(k), RawSeconds: raw.Seconds})
		res.RawSumSeconds += raw.Seconds
	}
	if err := commitLayers(ctx, sources, filepath.Join(p.dir, "layers")); err != nil {
		return res, err
	}
	op, err := startOperator(ctx, bin, p.plane.Kubeconfig(), p.dir, "operator-layers")
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, op.stop()) }()
	progressf("  layers: %d chained layers × %d releases", layerCount, releasesPerLayer)
	err = deployLayers(ctx, p.client, &res)
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, op.proc.LogTail(30))
	}
	return res, err
}

// commitLayers writes every layer's directory (its Namespace and its
// HelmReleases, as Flux helm.toolkit.fluxcd.io/v2 objects a Kraan user
// writes) and commits it; source-controller has fetched it on return.
func commitLayers(ctx context.Context, sources *env.Sources, dir string) error {
	for k := range layerCount {
		layerDir := filepath.Join(dir, "addons", benchLayerName(k))
		if err := os.MkdirAll(layerDir, 0o755); err != nil {
			return err
		}
		ns := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", benchLayerName(k))
		if err := os.WriteFile(filepath.Join(layerDir, "namespace.yaml"), []byte(ns), 0o644); err != nil {
			return err
		}
		for i := range releasesPerLayer {
			data, err := yaml.Marshal(fluxRelease(benchLayerName(k), layerReleaseName(i)))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(layerDir, layerReleaseName(i)+".yaml"), data, 0o644); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := sources.Commit(ctx, "bench layers", map[string]string{".": dir})
	return err
}

func fluxRelease(namespace, name string) map[string]any {
	return map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2",
		"kind":       "HelmRelease",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"interval": "10m",
			"timeout":  "2m",
			"chart": map[string]any{"spec": map[string]any{
				"chart":     "small",
				"sourceRef": map[string]any{"kind": "HelmRepository", "name": env.HelmRepositoryName, "namespace": env.FluxNamespace},
			}},
		},
	}
}

// layerTimes records, from watch events, when each layer's first
// HelmRelease appeared and when the layer turned Deployed.
type layerTimes struct {
	mu       sync.Mutex
	first    map[string]time.Time // namespace (= layer name) → first HelmRelease added
	deployed map[string]time.Time // layer → Deployed at layerVersion
}

// deployLayers creates the layers, dependents first (they wait, as in the
// soak), and waits until all are Deployed, recording the times of each.
func deployLayers(ctx context.Context, c client.WithWatch, res *report.Layers) error {
	ctx, cancel := context.WithTimeout(ctx, minPhaseTimeout)
	defer cancel()
	times := &layerTimes{first: map[string]time.Time{}, deployed: map[string]time.Time{}}
	releasesCtx, stopReleases := context.WithCancel(ctx)
	defer stopReleases()
	go func() {
		_, _ = watchCount(releasesCtx, c, &kraanv1.HelmReleaseList{}, &kraanv1.HelmRelease{}, "",
			times.recordRelease, nil, func(client.Object) bool { return false }, -1) // records until cancelled
	}()
	result := make(chan watchResult, 1)
	go func() {
		at, err := watchCount(ctx, c, &kraanv1.AddonsLayerList{}, &kraanv1.AddonsLayer{}, "",
			times.recordLayer, nil, isDeployed, layerCount)
		result <- watchResult{at, err}
	}()
	start := time.Now()
	for k := layerCount - 1; k >= 0; k-- {
		if err := c.Create(ctx, benchLayer(k)); err != nil {
			return err
		}
	}
	r := <-result
	if r.err != nil {
		return fmt.Errorf("waiting for the layers to be Deployed: %w", r.err)
	}
	res.Seconds = r.at.Sub(start).Seconds()
	times.mu.Lock()
	defer times.mu.Unlock()
	for k := range res.Each {
		name := benchLayerName(k)
		res.Each[k].Seconds = times.deployed[name].Sub(times.first[name]).Seconds()
		if k > 0 {
			h := times.first[name].Sub(times.deployed[benchLayerName(k-1)]).Seconds()
			res.Each[k].HandOffSeconds = &h
		}
	}
	return nil
}

func (t *layerTimes) recordRelease(typ watch.EventType, o client.Object) {
	if typ != watch.Added {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.first[o.GetNamespace()]; !ok {
		t.first[o.GetNamespace()] = time.Now()
	}
}

func (t *layerTimes) recordLayer(_ watch.EventType, o client.Object) {
	if !isDeployed(o) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.deployed[o.GetName()]; !ok {
		t.deployed[o.GetName()] = time.Now()
	}
}

// isDeployed: the layer is Deployed at layerVersion and its generation.
func isDeployed(o client.Object) bool {
	l, ok := o.(*kraanv1.AddonsLayer)
	return ok && l.Status.State == kraanv1.DeployedState && l.Status.Version == layerVersion &&
		l.Status.ObservedGeneration == l.Generation
}

// benchLayer is the AddonsLayer k, depending on the one before it.
func benchLayer(k int) *kraanv1.AddonsLayer {
	al := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: benchLayerName(k)},
		Spec: kraanv1.AddonsLayerSpec{
			Version: layerVersion,
			Source: kraanv1.SourceSpec{Name: env.GitRepositoryName, Namespace: env.FluxNamespace,
				Path: "./addons/" + benchLayerName(k)},
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Timeout:  metav1.Duration{Duration: 5 * time.Minute},
		},
	}
	if k > 0 {
		al.Spec.Prereqs.DependsOn = []string{benchLayerName(k-1) + "@" + layerVersion}
	}
	return al
}
