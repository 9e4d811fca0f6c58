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
	"github.com/kraan-io/kraan-operator/internal/source"
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
	// DefaultSourceNamespace is the namespace of a layer's source when
	// spec.source.namespace is empty (Kraan's RUNTIME_NAMESPACE).
	DefaultSourceNamespace string
	// Store, when set, is used instead of a store built from DataPath (tests).
	Store *source.Store
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
	Discovery discovery.ServerVersionInterface
	Events    kit.Events
	Metrics   *layerMetrics
	Options   Options
	now       func() time.Time
	// recent is what this process last applied per layer.
	recent recentApplies
}

// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers/finalizers,verbs=update
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets,verbs=get;list;watch
// A layer may hold any kind of object, so the operator applies and prunes any kind.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;create;update;patch;delete

// layerStep is one step of a layer's reconcile. It returns nil to go on, or
// the halt that ends this reconcile and says what to report.
type layerStep func(ctx context.Context, sc *layerScope) *halt

// Reconcile brings one AddonsLayer towards its desired state, as a list of
// steps; the status is written once, by the deferred patch.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	obj := &kraanv1.AddonsLayer{}
	// Fresh, not from the cache: acting on a stale spec is how Kraan applied a
	// dependent before its dependencies after a version bump (#64).
	if err := r.APIReader.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.AwaitsTakeOver() {
		// Kraan's controller handled this layer last and may still run:
		// nothing is written until the layer is handed over (a new status
		// or annotation triggers the next reconcile).
		r.Metrics.awaitingTakeOver(obj.Name)
		ctrl.LoggerFrom(ctx).Info("layer awaits take-over: its status is Kraan's; run `kubectl kraan takeover` once Kraan is stopped",
			"state", obj.Status.State)
		return ctrl.Result{}, nil
	}
	sc := newLayerScope(r.Client, obj, r.now())
	defer func() {
		// Errors quote object content, Secret data included: mask it before
		// anything is written, recorded or logged.
		sc.redactHalt()
		retErr = sc.redactor.Error(retErr)
		r.summarize(sc)
		// Metrics first: whoever sees the new status sees the metrics of it.
		r.Metrics.record(sc.layer, r.now().Sub(start))
		retErr = errors.Join(retErr, r.patchStatus(ctx, sc))
	}()

	if !obj.DeletionTimestamp.IsZero() {
		sc.halt = r.reconcileDelete(ctx, sc)
		return sc.halt.result()
	}
	if err := kit.EnsureFinalizer(ctx, r.Client, sc.layer, kraanv1.Finalizer, sc.patcher); err != nil {
		sc.halt = failed(kraanv1.ReasonReconcileError, err)
		return sc.halt.result()
	}
	steps := []layerStep{
		r.reconcileHold, r.reconcileSource, r.reconcileRender, r.reconcileHandover,
		r.reconcilePrerequisites, r.reconcileApply, r.reconcileReadiness, r.reconcileLayerTests,
	}
	for _, step := range steps {
		if h := step(ctx, sc); h != nil {
			sc.halt = h
			return h.result()
		}
	}
	sc.halt = deployed(sc)
	return sc.halt.result()
}

// reconcileDelete releases every object of the inventory, waits the grace
// period (spec.interval) so other layers can adopt them, prunes the rest, then
// removes the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *layerScope) *halt {
	if !controllerutil.ContainsFinalizer(sc.layer, kraanv1.Finalizer) {
		return &halt{state: kraanv1.PruningState, reason: kraanv1.ReasonDeleting, message: "AddonsLayer is being deleted"}
	}
	pending, until, err := r.releaseAll(ctx, sc, nil)
	if err != nil {
		return failed(kraanv1.ReasonPruneFailed, err)
	}
	if len(pending) > 0 {
		sc.inventory = pending
		return &halt{state: kraanv1.PruningState, reason: kraanv1.ReasonDeleting, requeue: until.Sub(sc.now) + time.Second,
			message: fmt.Sprintf("AddonsLayer is being deleted: %d objects are released and pruned at %s unless another layer adopts them",
				len(pending), until.UTC().Format(time.RFC3339))}
	}
	base := sc.layer.DeepCopy()
	controllerutil.RemoveFinalizer(sc.layer, kraanv1.Finalizer)
	if err := r.Patch(ctx, sc.layer, client.MergeFrom(base)); err != nil {
		return failed(kraanv1.ReasonPruneFailed, fmt.Errorf("removing finalizer: %w", err))
	}
	r.Metrics.forget(sc.layer.Name)
	sc.deleted = true
	return &halt{state: kraanv1.PruningState, reason: kraanv1.ReasonDeleting, message: "AddonsLayer deleted, its objects were pruned or adopted"}
}
