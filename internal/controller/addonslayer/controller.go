package addonslayer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/fleet"
	"github.com/kraan-io/kraan-operator/internal/source"
	"github.com/kraan-io/kraan-operator/internal/tenancy"
)

// Options are the AddonsLayer controller's settings.
type Options struct {
	// ControllerOptions are the workers and retry delays.
	kit.ControllerOptions
	// ChartBackedKinds are the kinds of watches.yaml: a layer holding their
	// objects waits for them to be Ready, and is triggered when they change.
	ChartBackedKinds []schema.GroupVersionKind
	// DataPath is the directory the artifact store keeps fetched sources in; a
	// directory under the system's temporary directory when empty.
	DataPath string
	// SourceHostOverride replaces the host[:port] of artifact URLs, for runs
	// outside the cluster that reach source-controller through a port-forward
	// (Kraan's SC_HOST).
	SourceHostOverride string
	// ArtifactLimits cap what a source artifact may download and extract
	// to (--max-artifact-size, --max-artifact-file-size,
	// --max-artifact-files); zero fields take source's defaults. Its
	// HostOverride is SourceHostOverride's.
	ArtifactLimits source.Options
	// DefaultSourceNamespace is the namespace of a layer's source when
	// spec.source.namespace is empty (Kraan's RUNTIME_NAMESPACE).
	DefaultSourceNamespace string
	// PlatformNamespaces are the namespaces whose FleetClusters and Cluster
	// API Clusters placed layers run on: the operator's own and
	// --platform-namespaces. Registrations anywhere else are ignored.
	PlatformNamespaces []string
	// Fleet lists and reaches the registered clusters; NewRegistry's when nil.
	Fleet *fleet.Registry
	// SnapshotNamespace keeps the versions placed layers ran (Secrets): the
	// operator's namespace; when empty, the last of PlatformNamespaces, else
	// DefaultSourceNamespace.
	SnapshotNamespace string
	// Sealer seals the HelmReleases a layer applies, so that they act as
	// the platform under the multi-tenancy lockdown while their spec is
	// the layer's (see internal/tenancy); nil seals none.
	Sealer *tenancy.Sealer
}

// Reconciler reconciles AddonsLayer objects: it fetches the layer's
// source artifact, renders its directory, hands objects over between layers,
// checks prerequisites, applies server-side and waits for the objects to be
// healthy. See docs/layers.md for the behaviour.
type Reconciler struct {
	client.Client
	// APIReader reads from the API server, bypassing the cache: the layer itself
	// and the layers it depends on are judged on fresh data (Kraan #64).
	APIReader client.Reader
	Applier   *apply.Applier
	Store     *source.Store
	// Fleet lists and reaches the registered clusters placed layers run
	// on; Snapshots keeps the versions they ran.
	Fleet     *fleet.Registry
	Snapshots *fleet.Snapshots
	Discovery discovery.ServerVersionInterface
	Events    kit.Events
	Metrics   *layerMetrics
	Options   Options
	now       func() time.Time
	// recent is what this process last applied per layer.
	recent recentApplies
	// floor raises spec.interval to --min-reconcile-interval.
	floor *kit.IntervalFloor
}

// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers/finalizers,verbs=update
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets,verbs=get;list;watch
// +kubebuilder:rbac:groups=kraan.io,resources=fleetclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list
// A layer may hold any kind of object, so the operator applies and prunes any kind.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings one AddonsLayer towards its desired state, as a list of
// steps; the status is written once, by finish.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kit.Reconcile[*layerScope](ctx, r, req)
}

// Read gets the layer fresh, not from the cache: acting on a stale spec is
// how Kraan applied a dependent before its dependencies after a version bump
// (#64). A layer Kraan handled last is left alone.
func (r *Reconciler) Read(ctx context.Context, req ctrl.Request) (*layerScope, bool, error) {
	start := r.now()
	obj := &kraanv1.AddonsLayer{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
		}
		return nil, false, err
	}
	if obj.AwaitsTakeOver() {
		// Kraan's controller handled this layer last and may still run:
		// nothing is written until the layer is handed over (a new status
		// or annotation triggers the next reconcile).
		r.Metrics.awaitingTakeOver(obj.Name)
		ctrl.LoggerFrom(ctx).Info("layer awaits take-over: its status is Kraan's; run `kubectl kraan takeover` once Kraan is stopped",
			"state", obj.Status.State)
		return nil, false, nil
	}
	sc := newLayerScope(r.Client, obj, r.now())
	sc.applier, sc.discovery = r.Applier, r.Discovery
	sc.started = start
	sc.interval = r.floor.Apply(ctx, obj, "spec.interval", obj.Spec.Interval.Duration)
	return sc, true, nil
}

// Steps are the layer's steps. A step ends the reconcile with an error (a
// layerError: the state and kit's class); a layer that went through every
// step is Deployed.
func (r *Reconciler) Steps(sc *layerScope) []kit.Step[*layerScope] {
	placed := sc.layer.Spec.Placement != nil
	switch {
	case !sc.layer.DeletionTimestamp.IsZero() && placed:
		return []kit.Step[*layerScope]{r.reconcileDeletePlaced}
	case !sc.layer.DeletionTimestamp.IsZero():
		return []kit.Step[*layerScope]{r.reconcileDelete}
	case placed:
		// The same steps up to the objects; then, per cluster, the rest.
		return []kit.Step[*layerScope]{r.reconcileFinalizer,
			r.reconcileHold, r.reconcileSource, r.reconcileRender, r.reconcilePlacement,
		}
	}
	return []kit.Step[*layerScope]{r.reconcileFinalizer, r.reconcileUnplaced,
		r.reconcileHold, r.reconcileSource, r.reconcileRender, r.reconcileHandover,
		r.reconcilePrerequisites, r.reconcileApply, r.reconcileReadiness, r.reconcileLayerTests,
	}
}

// reconcileFinalizer stores the finalizer that prunes the layer's objects
// on deletion.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	if err := kit.EnsureFinalizer(ctx, r.Client, sc.layer, kraanv1.Finalizer, sc.patcher); err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonReconcileError, err)
	}
	return ctrl.Result{}, nil
}

// addonsLayersResource is the resource whose CRD's deletion makes a
// layer's deletion leave its objects in place (kit.KindBeingRemoved).
var addonsLayersResource = kraanv1.GroupVersion.WithResource("addonslayers").GroupResource()

// Finish reports how the steps ended (state, conditions, event, metrics),
// writes the status once, and tells controller-runtime when to come back:
// from the error's class, or spec.interval for a Deployed layer. A step
// ends the layer's pass with an error or not at all: res is always zero.
func (r *Reconciler) Finish(ctx context.Context, sc *layerScope, _ ctrl.Result, err error) (ctrl.Result, error) {
	// Errors quote object content, Secret data included: masked before
	// anything is written, recorded or logged.
	err = sc.redactor.Error(err)
	out := deployed(sc)
	if err != nil {
		out = outcomeOf(err)
	}
	r.summarize(sc, out)
	// Metrics first: whoever sees the new status sees the metrics of it.
	r.Metrics.record(sc.layer, r.now().Sub(sc.started))
	patchErr := r.patchStatus(ctx, sc)
	if err == nil {
		return ctrl.Result{RequeueAfter: out.requeue}, patchErr
	}
	res, err := kit.ResultOf(err)
	return res, errors.Join(err, patchErr)
}

// removeFinalizer lets the deleted layer go, and its metrics.
func (r *Reconciler) removeFinalizer(ctx context.Context, sc *layerScope) error {
	base := sc.layer.DeepCopy()
	controllerutil.RemoveFinalizer(sc.layer, kraanv1.Finalizer)
	if err := r.Patch(ctx, sc.layer, client.MergeFrom(base)); err != nil {
		return failed(kraanv1.ReasonPruneFailed, fmt.Errorf("removing finalizer: %w", err))
	}
	r.Metrics.forget(sc.layer.Name)
	sc.deleted = true
	return nil
}

// reconcileDelete releases every object of the inventory, waits the grace
// period (spec.interval) so other layers can adopt them, prunes the rest, then
// removes the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(sc.layer, kraanv1.Finalizer) {
		return ctrl.Result{}, waitingIn(kraanv1.PruningState, kraanv1.ReasonDeleting, 0, "AddonsLayer is being deleted")
	}
	why, kindRemoved, err := kit.KindBeingRemoved(ctx, r.APIReader, addonsLayersResource)
	if err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonPruneFailed, err)
	}
	var pending []kraanv1.Resource
	var until time.Time
	if !kindRemoved {
		if pending, until, err = r.releaseAll(ctx, sc, nil); err != nil {
			return ctrl.Result{}, failed(kraanv1.ReasonPruneFailed, err)
		}
	}
	if len(pending) > 0 {
		sc.inventory = pending
		return ctrl.Result{}, waitingIn(kraanv1.PruningState, kraanv1.ReasonDeleting, until.Sub(sc.now)+time.Second,
			fmt.Sprintf("AddonsLayer is being deleted: %d objects are released and pruned at %s unless another layer adopts them",
				len(pending), until.UTC().Format(time.RFC3339)))
	}
	if err := r.removeFinalizer(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	if kindRemoved {
		// Its objects keep the layer's label: a layer of the same name
		// applies them again as its own.
		return ctrl.Result{}, waitingIn(kraanv1.PruningState, kraanv1.ReasonDeleting, 0,
			"AddonsLayer deleted without pruning, its objects stay in place: "+why)
	}
	return ctrl.Result{}, waitingIn(kraanv1.PruningState, kraanv1.ReasonDeleting, 0, "AddonsLayer deleted, its objects were pruned or adopted")
}
