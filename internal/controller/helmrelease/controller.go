// Package helmrelease reconciles kraan.io/v1alpha1 HelmReleases with the
// embedded Helm engine (internal/helm): the chart comes from a Flux source,
// the values from the spec and valuesFrom, and the engine chooses each Helm
// action from what Helm storage holds. See docs/helmreleases.md.
package helmrelease

import (
	"context"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/helmrun"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
	"github.com/kraan-io/kraan-operator/internal/source"
	"github.com/kraan-io/kraan-operator/internal/tenancy"
)

// Options are the HelmRelease controller's settings.
type Options struct {
	// ControllerOptions are the workers and retry delays.
	kit.ControllerOptions
	// Tenancy says as whom a HelmRelease naming no ServiceAccount acts.
	Tenancy tenancy.Policy
	// Charts gets the charts; by default from Flux sources, with artifacts
	// kept under ChartArtifactsDir.
	Charts releasespec.ChartGetter
	// ChartArtifactsDir holds the source artifacts charts are read from;
	// defaults to a directory under the system's temporary directory.
	ChartArtifactsDir string
	// ArtifactLimits cap what a source artifact holding a chart may
	// download and extract to; zero fields take source's defaults.
	ArtifactLimits source.Options
	// ChartFetch caps what chart repositories and registries may send and
	// sizes the caches of what they sent; unused when Charts is set.
	ChartFetch chart.Options
	// HelmDefaults resolve the fields Flux v1.5/v1.6 added when a release
	// leaves them unset (--feature-gates=UseHelm3Defaults).
	HelmDefaults defaults.Defaults
	// MaxConcurrentRollouts caps the releases rolling out at once
	// (--max-concurrent-rollouts); the pacing adapts below it. 0 means
	// pace.DefaultMax.
	MaxConcurrentRollouts int
	// RunGracePeriod is how long Helm actions in flight may finish once the
	// operator stops (--helm-run-grace-period); 0 means
	// DefaultRunGracePeriod.
	RunGracePeriod time.Duration
	// NoCrossNamespaceRefs refuses references to objects in other namespaces
	// (--no-cross-namespace-refs), to keep tenants apart.
	NoCrossNamespaceRefs bool
	// DependencyRequeue is how often a release waiting on its dependencies
	// is looked at again besides the watches on them (--requeue-dependency);
	// zero takes DefaultDependencyRequeue.
	DependencyRequeue time.Duration
	// WatchConfigs selects the valuesFrom ConfigMaps and Secrets (and
	// kubeConfig Secrets) whose change reconciles their releases at once
	// (--watch-configs-label-selector); nil takes
	// DefaultWatchConfigsLabelSelector. The others are read at each
	// reconcile, so a change of theirs lands at the next interval, as in Flux.
	WatchConfigs labels.Selector
	// WatchNamespaces limits the cache of watched ConfigMaps the controller
	// starts itself; empty watches all namespaces, as the manager's cache.
	WatchNamespaces []string
}

// DefaultWatchConfigsLabelSelector is Flux's --watch-configs-label-selector
// default: a valuesFrom source labelled reconcile.fluxcd.io/watch: Enabled is
// watched. Watching every ConfigMap of a cluster would keep each one's
// metadata in memory (tens of thousands at 10,000 releases, most of them the
// releases' own) to notice the few that are values.
const DefaultWatchConfigsLabelSelector = watchLabel + "=" + watchEnabled

// Flux's label on a valuesFrom source to watch, and its value.
const (
	watchLabel   = "reconcile.fluxcd.io/watch"
	watchEnabled = "Enabled"
)

func (o Options) watchConfigs() labels.Selector {
	if o.WatchConfigs == nil {
		return labels.SelectorFromSet(labels.Set{watchLabel: watchEnabled})
	}
	return o.WatchConfigs
}

// DefaultDependencyRequeue is Flux's --requeue-dependency default.
const DefaultDependencyRequeue = 30 * time.Second

func (o Options) dependencyRequeue() time.Duration {
	if o.DependencyRequeue <= 0 {
		return DefaultDependencyRequeue
	}
	return o.DependencyRequeue
}

func (o Options) runGracePeriod() time.Duration {
	if o.RunGracePeriod <= 0 {
		return DefaultRunGracePeriod
	}
	return o.RunGracePeriod
}

// Reconciler installs and keeps HelmReleases in sync with the
// embedded Helm engine.
type Reconciler struct {
	client.Client
	// APIReader reads ConfigMaps and Secrets uncached: the operator watches
	// only their metadata, so it does not hold every Secret of the cluster in memory.
	APIReader client.Reader
	Engine    *helm.Engine
	Charts    releasespec.ChartGetter
	Events    kit.Events
	// Tenancy says as whom a HelmRelease naming no ServiceAccount acts
	// (--multi-tenancy-lockdown, --default-service-account,
	// --platform-namespaces).
	Tenancy tenancy.Policy
	// NoCrossNamespaceRefs refuses references to other namespaces.
	NoCrossNamespaceRefs bool
	// DependencyRequeue is how often a release waiting on dependencies is
	// looked at again besides the watch on them: a safety net, not the trigger.
	DependencyRequeue time.Duration
	// HelmDefaults resolve the fields Flux v1.5/v1.6 added when a release
	// leaves them unset: how it waits, applies and post-renders.
	HelmDefaults defaults.Defaults
	Metrics      *Metrics
	// runs are the Helm runs going on outside the workers, their rollout
	// pacing and what this process last wrote that the cache may not show.
	runs *helmrun.Runs[startedFor]
	// repoWatch re-queues the releases a change of their HelmRepository's
	// index concerns.
	repoWatch *repositoryWatch
	// floor raises the periods a release asks for (spec.interval, the
	// strategies' retryInterval) to --min-reconcile-interval.
	floor *kit.IntervalFloor
	// fluxKindMissing is when this process last found Flux's HelmRelease
	// kind not served (Unix nanoseconds; 0: served, or not asked yet).
	fluxKindMissing atomic.Int64
}

// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases/finalizers,verbs=update
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories;helmcharts;gitrepositories;ocirepositories;buckets;externalartifacts,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// Helm installs arbitrary charts: the operator needs every verb on every
// resource, unless releases run as a service account (serviceAccountName).
// +kubebuilder:rbac:groups=*,resources=*,verbs=*

// supersedeWait ends the wait of the run going on for key when the
// HelmRelease has a newer generation than the run is for (Flux 2.8's
// CancelHealthCheckOnNewRevision, on unless the gate turns it off): the
// revision it waits for is marked interrupted, and the run's end re-queues
// the release, which then applies the newer spec.
func (r *Reconciler) supersedeWait(ctx context.Context, key types.NamespacedName) {
	hr := &kraanv1.HelmRelease{}
	if err := r.Get(ctx, key, hr); err != nil {
		return
	}
	if r.runs.Supersede(key, hr.Generation) {
		ctrl.LoggerFrom(ctx).Info("A newer generation arrived during a Helm wait: the wait ends, the newer spec is applied next",
			"generation", hr.Generation)
	}
}

// Reconcile brings one HelmRelease towards its desired state (kit's
// skeleton: Read, Steps, Finish).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kit.Reconcile[*releaseScope](ctx, r, req)
}

// Read gets the release, unless Helm is at work on it outside the workers:
// the end of its run re-queues it, and a newer spec ends the run's wait.
func (r *Reconciler) Read(ctx context.Context, req ctrl.Request) (*releaseScope, bool, error) {
	if r.runs.Active(req.NamespacedName) {
		r.supersedeWait(ctx, req.NamespacedName)
		return nil, false, nil
	}
	hr, err := r.read(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forgetRelease(req.Namespace, req.Name)
			r.repoWatch.Forget(req.NamespacedName)
			r.runs.Forget(req.NamespacedName)
			r.Engine.ForgetCluster(req.String())
		}
		return nil, false, err
	}
	return &releaseScope{hr: hr, patcher: kit.NewPatcher(r.Client, hr)}, true, nil
}

// Steps are the deletion of a release being deleted; else the finalizer,
// then nothing more for a suspended release, or the steps of a release.
func (r *Reconciler) Steps(sc *releaseScope) []kit.Step[*releaseScope] {
	if !sc.hr.DeletionTimestamp.IsZero() {
		return []kit.Step[*releaseScope]{r.reconcileDelete}
	}
	if sc.hr.Spec.Suspend {
		return []kit.Step[*releaseScope]{r.reconcileFinalizer, r.reconcileSuspended}
	}
	return []kit.Step[*releaseScope]{
		r.reconcileFinalizer,
		r.reconcileAccess,
		r.reconcileHealthChecks,
		r.reconcileDependencies,
		r.reconcileTarget,
		r.reconcileChart,
		r.reconcileValues,
		r.reconcileRelease,
		r.reconcileDrift,
	}
}

// reconcileFinalizer stores the finalizer that uninstalls the release on
// deletion.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	return ctrl.Result{}, kit.EnsureFinalizer(ctx, r.Client, sc.hr, kraanv1.Finalizer, sc.patcher)
}

// reconcileSuspended ends the pass of a suspended release, whose status
// keeps what it said.
func (r *Reconciler) reconcileSuspended(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("Reconciliation is suspended")
	sc.suspended = true
	return ctrl.Result{}, nil
}

// read gets the release from the cache, or from the API server when the
// cached copy may predate what this process last wrote: the failure counters
// and handled requests in status decide what Helm does next.
func (r *Reconciler) read(ctx context.Context, key client.ObjectKey) (*kraanv1.HelmRelease, error) {
	hr := &kraanv1.HelmRelease{}
	if err := r.Get(ctx, key, hr); err != nil {
		return nil, err
	}
	if !r.runs.Written.Stale(key, statusDigest(hr)) {
		return hr, nil
	}
	if err := r.APIReader.Get(ctx, key, hr); err != nil {
		return nil, err
	}
	return hr, nil
}
