package controller

import (
	"fmt"
	"os"
	"path/filepath"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/source"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

// Options are the settings shared by the reconcilers.
type Options struct {
	// MaxConcurrentReconciles is the number of workers per kind.
	MaxConcurrentReconciles int
	// DefaultServiceAccount is impersonated by HelmReleases that name none.
	DefaultServiceAccount string
	// Charts gets the charts of HelmReleases; by default from Flux sources,
	// with artifacts kept under ChartArtifactsDir.
	Charts ChartGetter
	// ChartArtifactsDir holds the source artifacts charts are read from;
	// defaults to a directory under the system's temporary directory.
	ChartArtifactsDir string
	// Layers are the AddonsLayer controller's settings.
	Layers LayerOptions
	// Watches are the chart-backed kinds of watches.yaml, each reconciled as
	// one Helm release per object.
	Watches []watches.Watch
	// WatchNamespaces limits the caches the Habitat controller starts itself;
	// empty watches all namespaces, as the manager's cache.
	WatchNamespaces []string
}

// WatchedKinds are the kinds whose informers must have synced before the
// operator reports ready: without AddonsLayers when it watches only some
// namespaces (see LayersEnabled).
func WatchedKinds(watchNamespaces []string) []client.Object {
	kinds := []client.Object{&kraanv1.HelmRelease{}, &habitatv1.Habitat{}}
	if LayersEnabled(watchNamespaces) {
		kinds = append(kinds, &kraanv1.AddonsLayer{})
	}
	return kinds
}

// LayersEnabled reports whether the AddonsLayer controller runs. It runs only
// when the operator watches every namespace: a layer is cluster-scoped and
// applies objects of any kind anywhere, which an operator confined to a few
// namespaces can neither read nor write.
func LayersEnabled(watchNamespaces []string) bool { return len(watchNamespaces) == 0 }

// controllerSetup registers one controller.
type controllerSetup struct {
	name  string
	setup func(ctrl.Manager, Options) error
}

// SetupAll registers every reconciler with mgr.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	if opts.Charts == nil {
		charts, err := newSourceCharts(mgr, opts.ChartArtifactsDir)
		if err != nil {
			return err
		}
		opts.Charts = charts
	}
	engine, err := helm.NewEngine(mgr.GetConfig())
	if err != nil {
		return err
	}
	metrics, err := NewMetrics(nil)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	releases := &HelmReleaseReconciler{
		Client:                mgr.GetClient(),
		APIReader:             mgr.GetAPIReader(),
		Engine:                engine,
		Charts:                opts.Charts,
		Recorder:              mgr.GetEventRecorder("kraan-operator"),
		DefaultServiceAccount: opts.DefaultServiceAccount,
		Metrics:               metrics,
	}
	setups := []controllerSetup{
		{"HelmRelease", releases.SetupWithManager},
		{"Habitat and chart-backed", setupHybrid(engine)},
	}
	if LayersEnabled(opts.WatchNamespaces) {
		setups = append(setups, controllerSetup{"AddonsLayer", setupAddonsLayer})
	} else {
		mgr.GetLogger().Info("AddonsLayer controller disabled: it needs the whole cluster, the operator watches only some namespaces",
			"namespaces", opts.WatchNamespaces)
	}
	for _, s := range setups {
		if err := s.setup(mgr, opts); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", s.name, err)
		}
	}
	return nil
}

// Leader election and events are needed by every controller.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch

func newSourceCharts(mgr ctrl.Manager, dir string) (*SourceCharts, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kraan-operator", "chart-artifacts")
	}
	store, err := source.New(dir, source.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the chart artifact store: %w", err)
	}
	return &SourceCharts{Reader: mgr.GetAPIReader(), Fetcher: chart.NewFetcher(chart.Options{}), Artifacts: store}, nil
}
