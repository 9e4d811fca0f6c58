// Package operator wires the operator's controllers into a manager: the
// HelmRelease controller, one chart-backed controller per watches.yaml entry,
// the Habitat Go controller and, when the operator sees the whole cluster,
// the AddonsLayer controller. cmd/ and the tests start the operator through
// SetupAll, so they run the same wiring.
package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/addonslayer"
	"github.com/kraan-io/kraan-operator/internal/controller/chartbacked"
	"github.com/kraan-io/kraan-operator/internal/controller/fleetcluster"
	"github.com/kraan-io/kraan-operator/internal/controller/habitat"
	"github.com/kraan-io/kraan-operator/internal/controller/helmrelease"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/helm/sandbox"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
	"github.com/kraan-io/kraan-operator/internal/source"
	"github.com/kraan-io/kraan-operator/internal/tenancy"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

// Options are the operator's settings.
type Options struct {
	// ControllerOptions are the workers and retry delays of every controller.
	kit.ControllerOptions
	// DefaultServiceAccount is impersonated by HelmReleases that name none
	// (under Lockdown: those a tenant wrote, "default" when empty) and by
	// the releases of chart-backed kinds whose watch names none.
	DefaultServiceAccount string
	// Lockdown is --multi-tenancy-lockdown (see internal/tenancy): the
	// command line turns it on by default; the zero Options keep Flux's
	// unlocked behaviour.
	Lockdown bool
	// PlatformNamespaces are the namespaces, the operator's own among
	// them, whose HelmReleases act as the operator under Lockdown.
	PlatformNamespaces []string
	// Charts gets the charts of HelmReleases; by default from Flux sources,
	// with artifacts kept under ChartArtifactsDir.
	Charts releasespec.ChartGetter
	// ChartArtifactsDir holds the source artifacts charts are read from;
	// defaults to a directory under the system's temporary directory.
	ChartArtifactsDir string
	// ArtifactLimits cap what a Flux source artifact (a layer's, or one
	// holding a chart) may download and extract to; zero fields take
	// source's defaults.
	ArtifactLimits source.Options
	// MaxRecordSize bounds a Helm release record before it is encoded;
	// 0 keeps helm.DefaultMaxRecordBytes.
	MaxRecordSize int64
	// RenderLimits bound the worker each chart's templates run in (see
	// internal/helm/sandbox); zero fields take its defaults.
	RenderLimits sandbox.Limits
	// ChartFetch caps what chart repositories and registries may send and
	// sizes the caches of what they sent; zero fields take chart's defaults.
	ChartFetch chart.Options
	// Layers are the AddonsLayer controller's settings.
	Layers addonslayer.Options
	// Watches are the chart-backed kinds of watches.yaml, each reconciled as
	// one Helm release per object.
	Watches []watches.Watch
	// WatchNamespaces limits the caches the controllers start themselves
	// (the Habitat controller's, the watched valuesFrom ConfigMaps, the
	// layers' workloads, the objects chart-backed releases render); empty
	// watches all namespaces, as the manager's cache.
	WatchNamespaces []string
	// WatchConfigs selects the valuesFrom ConfigMaps and Secrets whose
	// change reconciles their releases at once
	// (--watch-configs-label-selector); nil takes Flux's default,
	// helmrelease.DefaultWatchConfigsLabelSelector.
	WatchConfigs labels.Selector
	// RecordKeySecret is the Secret, in the operator's namespace, whose key
	// signs the release records the operator writes (created when absent).
	RecordKeySecret types.NamespacedName
	// RecordKey, when set, is the key itself and RecordKeySecret is not
	// read: tests sign the records they edit with the same key.
	RecordKey []byte
	// HelmDefaults resolve the fields Flux v1.5/v1.6 added when a release
	// leaves them unset (--feature-gates=UseHelm3Defaults).
	HelmDefaults defaults.Defaults
	// MaxConcurrentRollouts caps the HelmReleases rolling out at once
	// (--max-concurrent-rollouts); 0 means pace.DefaultMax.
	MaxConcurrentRollouts int
	// HelmRunGracePeriod is how long Helm actions in flight may finish once
	// the operator stops (--helm-run-grace-period).
	HelmRunGracePeriod time.Duration
	// NoCrossNamespaceRefs refuses HelmRelease references to objects in
	// other namespaces (--no-cross-namespace-refs).
	NoCrossNamespaceRefs bool
	// DependencyRequeue is how often a HelmRelease waiting on its
	// dependencies is looked at again (--requeue-dependency).
	DependencyRequeue time.Duration
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

// SetupAll registers every controller with mgr.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	engine, err := helm.NewEngine(mgr.GetConfig())
	if err != nil {
		return err
	}
	// Bounded: the manager has not started, nothing else cancels this.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := recordKey(ctx, mgr.GetConfig(), opts)
	if err != nil {
		return err
	}
	engine.SignRecordsWith(key)
	engine.LimitRecordSize(opts.MaxRecordSize)
	if err := engine.RenderInSandbox(opts.RenderLimits); err != nil {
		return err
	}
	sealer, err := tenancy.NewSealer(key)
	if err != nil {
		return err
	}
	policy := tenancy.Policy{Lockdown: opts.Lockdown, ServiceAccount: opts.DefaultServiceAccount,
		PlatformNamespaces: opts.PlatformNamespaces, Sealer: sealer}
	if err := helmrelease.Setup(mgr, engine, helmrelease.Options{
		ControllerOptions:     opts.ControllerOptions,
		Tenancy:               policy,
		Charts:                opts.Charts,
		ChartArtifactsDir:     opts.ChartArtifactsDir,
		ArtifactLimits:        opts.ArtifactLimits,
		ChartFetch:            opts.ChartFetch,
		HelmDefaults:          opts.HelmDefaults,
		MaxConcurrentRollouts: opts.MaxConcurrentRollouts,
		RunGracePeriod:        opts.HelmRunGracePeriod,
		NoCrossNamespaceRefs:  opts.NoCrossNamespaceRefs,
		DependencyRequeue:     opts.DependencyRequeue,
		WatchConfigs:          opts.WatchConfigs,
		WatchNamespaces:       opts.WatchNamespaces,
	}); err != nil {
		return fmt.Errorf("setting up the HelmRelease controller: %w", err)
	}
	if err := setupChartBacked(mgr, engine, opts); err != nil {
		return err
	}
	if err := mgr.Add(warmUp(engine, mgr.GetLogger().WithName("helm-warm-up"))); err != nil {
		return err
	}
	if !LayersEnabled(opts.WatchNamespaces) {
		mgr.GetLogger().Info("AddonsLayer controller disabled: it needs the whole cluster, the operator watches only some namespaces",
			"namespaces", opts.WatchNamespaces)
		return nil
	}
	layers := opts.Layers
	layers.ControllerOptions = opts.ControllerOptions
	layers.ChartBackedKinds = chartBackedKinds(opts.Watches)
	layers.Sealer = sealer
	layers.ArtifactLimits = opts.ArtifactLimits
	layers.PlatformNamespaces = opts.PlatformNamespaces
	// One registry: the layers and the FleetCluster checks share each
	// cluster's connection.
	if layers.Fleet, err = addonslayer.NewRegistry(mgr, layers); err != nil {
		return err
	}
	if err := addonslayer.Setup(mgr, layers); err != nil {
		return fmt.Errorf("setting up the AddonsLayer controller: %w", err)
	}
	if err := fleetcluster.Setup(mgr, layers.Fleet, opts.ControllerOptions); err != nil {
		return fmt.Errorf("setting up the FleetCluster controller: %w", err)
	}
	return nil
}

// setupChartBacked registers the Helm/Go hybrid APIs: one chart-backed
// controller per watches.yaml entry, then the Habitat Go controller, which
// completes the chart-backed Habitat kind.
func setupChartBacked(mgr ctrl.Manager, engine *helm.Engine, opts Options) error {
	// One cache of the objects releases render serves every chart-backed
	// kind: two charts rendering StatefulSets share one watch of them.
	dependents, err := chartbacked.NewDependentsCache(mgr, opts.WatchNamespaces)
	if err != nil {
		return err
	}
	for _, w := range opts.Watches {
		chartOpts := chartbacked.Options{ControllerOptions: opts.ControllerOptions, DefaultServiceAccount: opts.DefaultServiceAccount,
			ExtraConditions: chartConditions[w.GroupVersionKind()], Dependents: dependents}
		if w.GroupVersionKind() == habitatv1.GroupVersion.WithKind("Habitat") {
			chartOpts.Companions = habitat.Companions
		}
		if err := chartbacked.Setup(mgr, engine, w, chartOpts); err != nil {
			return fmt.Errorf("setting up the chart-backed %s controller: %w", w.String(), err)
		}
	}
	if err := habitat.Setup(mgr, habitat.Options{ControllerOptions: opts.ControllerOptions, WatchNamespaces: opts.WatchNamespaces}); err != nil {
		return fmt.Errorf("setting up the Habitat controller: %w", err)
	}
	return nil
}

// chartConditions are the conditions the Go half of a hybrid kind writes
// that its chart-backed controller counts towards Ready.
var chartConditions = map[schema.GroupVersionKind][]kit.Owned{
	habitatv1.GroupVersion.WithKind(habitatv1.Kind): habitat.ChartConditions,
}

// chartBackedKinds are the kinds of watches.yaml: a layer waits for their
// objects to be Ready at their generation, as for HelmReleases.
func chartBackedKinds(ws []watches.Watch) []schema.GroupVersionKind {
	kinds := make([]schema.GroupVersionKind, 0, len(ws))
	for _, w := range ws {
		kinds = append(kinds, w.GroupVersionKind())
	}
	return kinds
}

// Leader election and events are needed by every controller.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch

// warmUp runs the Helm engine's warm-up once the operator leads, beside the
// controllers: the first releases need not wait for discovery and OpenAPI
// documents inside their reconciles. A failure is only logged; the first
// action then does the same work itself.
func warmUp(engine *helm.Engine, log logr.Logger) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		start := time.Now()
		if err := engine.Warm(ctx); err != nil {
			log.Info("Warming up Helm failed; the first release does it instead", "error", err.Error())
			return nil
		}
		log.V(1).Info("Warmed up Helm", "took", time.Since(start).String())
		return nil
	})
}
