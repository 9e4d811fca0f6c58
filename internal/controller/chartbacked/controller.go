package chartbacked

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

// Reconciler reconciles the objects of one chart-backed kind listed in
// watches.yaml: each object is one Helm release of the watch's chart, named
// and placed as the object, with the object's .spec as values.
type Reconciler struct {
	client.Client
	// Engine runs the releases.
	Engine *helm.Engine
	// Watch is the watches.yaml entry of the kind.
	Watch watches.Watch
	// Mapper tells the post-renderer which kinds are namespaced.
	Mapper meta.RESTMapper
	// Events records release failures.
	Events kit.Events
	// APIReader reads the object fresh before its status is written.
	APIReader client.Reader
	// DefaultServiceAccount is impersonated by every Helm action when the
	// watch names no ServiceAccount (--default-service-account); with
	// neither, the actions run as the operator.
	DefaultServiceAccount string
	// Companions are objects the Go half of the kind makes for an object
	// (Options.Companions).
	Companions func(*unstructured.Unstructured) []client.Object

	chartDigest string
	// summary derives Ready from Operator SDK's conditions and the kind's
	// registered extra ones.
	summary kit.Summary
	// controller and dependents let Reconcile add a watch for each kind a
	// release renders, the first time it sees the kind.
	controller controller.Controller
	mgr        manager.Manager
	dependents sync.Map
	// dependentsCache holds the metadata the dependent watches read.
	dependentsCache cache.Cache
	// floor raises a reconcile-period annotation below the operator's
	// minimum (--min-reconcile-interval).
	floor *kit.IntervalFloor
}

// chartScope carries what the steps of one pass observed. reconcileRelease
// fills everything; the status setters only read it.
type chartScope struct {
	obj *unstructured.Unstructured
	// period is the watch's reconcilePeriod for the object.
	period time.Duration
	// result is the engine's run; Latest is the release now in storage.
	result helm.Result
	// valuesErr is set when the spec could not be turned into values.
	valuesErr error
	// runErr is the engine's error.
	runErr error
	// released is set once the release step ran: only then is there
	// anything to report.
	released bool
	// failure is the classified error the steps ended with (outcome): its
	// reason is the one the conditions and events give.
	failure error
}

// Reconcile brings one object's release to its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kit.Reconcile[*chartScope](ctx, r, req)
}

// Read gets the object, when the watch's selector chooses it.
func (r *Reconciler) Read(ctx context.Context, req ctrl.Request) (*chartScope, bool, error) {
	obj := r.newObject()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return nil, false, err
	}
	if !r.Watch.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
		return nil, false, nil
	}
	sc := &chartScope{obj: obj}
	if obj.GetDeletionTimestamp().IsZero() {
		sc.period = r.periodFor(ctx, obj)
	}
	return sc, true, nil
}

// Steps uninstall the release of an object being deleted; else store the
// finalizer, run the release and watch what it rendered.
func (r *Reconciler) Steps(sc *chartScope) []kit.Step[*chartScope] {
	if !sc.obj.GetDeletionTimestamp().IsZero() {
		return []kit.Step[*chartScope]{r.reconcileDelete}
	}
	return []kit.Step[*chartScope]{r.reconcileFinalizer, r.reconcileRelease, r.reconcileDependents}
}

// reconcileFinalizer stores the finalizer before the first release exists,
// or a quick delete would leave the release behind.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, sc *chartScope) (ctrl.Result, error) {
	return ctrl.Result{}, kit.EnsureFinalizer(ctx, r.Client, sc.obj, kraanv1.ChartFinalizer, kit.NewPatcher(r.Client, sc.obj))
}

// Finish writes what the release step observed and records its failures; a
// pass that never reached the release (a deletion, a finalizer not stored)
// observed nothing to write.
func (r *Reconciler) Finish(ctx context.Context, sc *chartScope, res ctrl.Result, err error) (ctrl.Result, error) {
	if !sc.released {
		return res, err
	}
	sc.failure = err
	if err := r.writeStatus(ctx, sc.obj, sc); err != nil {
		return ctrl.Result{}, err
	}
	r.recordFailures(sc.obj, sc)
	return chartResult(sc, err)
}

// writeStatus writes what this pass observed onto a fresh read of the
// object, so that the conditions another controller owns (SecretsReady, from
// a Go half) are kept as they are now rather than as they were when the pass
// began, seconds of Helm ago; a conflict with that controller's write is
// retried at once on a new read.
func (r *Reconciler) writeStatus(ctx context.Context, obj *unstructured.Unstructured, sc *chartScope) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := r.newObject()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		patcher := kit.NewLockingPatcher(r.Client, fresh)
		setChartStatus(fresh, sc, r.summary)
		if err := patcher.Patch(ctx, fresh); err != nil {
			return err
		}
		obj.Object["status"] = fresh.Object["status"]
		return nil
	})
}

// chartResult decides the requeue from the class of the steps' error (see
// reconcileRelease); a success waits for the watch's reconcilePeriod.
func chartResult(sc *chartScope, err error) (ctrl.Result, error) {
	if err == nil {
		return ctrl.Result{RequeueAfter: sc.period}, nil
	}
	return kit.ResultOf(err)
}

// reconcileRelease turns the spec into values and runs the release. A spec
// the overrides cannot apply to fails the same way until it changes, and its
// update brings the object back: terminal. So is a tampered record, which no
// retry fixes: it is looked at again each period, in case the record was
// restored. Engine errors back off.
func (r *Reconciler) reconcileRelease(ctx context.Context, sc *chartScope) (ctrl.Result, error) {
	obj := sc.obj
	sc.released = true
	spec, _, err := unstructured.NestedMap(obj.Object, "spec")
	if err != nil {
		sc.valuesErr = fmt.Errorf("reading .spec: %w", err)
		return ctrl.Result{}, outcome.Terminal(kraanv1.ReasonErrorGettingValues, sc.valuesErr)
	}
	values, err := r.Watch.Values(spec)
	if err != nil {
		sc.valuesErr = err
		return ctrl.Result{}, outcome.Terminal(kraanv1.ReasonErrorGettingValues, sc.valuesErr)
	}
	sc.result, sc.runErr = r.Engine.Run(ctx, helm.Request{
		Target:       r.targetOf(obj),
		Desired:      helm.Desired{Chart: r.Watch.LoadedChart, ChartDigest: r.chartDigest, Values: values},
		Actions:      actionsFor(obj),
		PostRenderer: r.postRenderer(obj),
	})
	if sc.runErr == nil && sc.result.Next == helm.ActionStalled {
		sc.runErr = failedActions(sc.result)
	}
	if sc.runErr == nil {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, outcome.Transient(kraanv1.ReasonReconcileError, sc.runErr)
}

// reconcileDelete uninstalls the release, then lets the object go.
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *chartScope) (ctrl.Result, error) {
	return ctrl.Result{}, r.uninstall(ctx, sc.obj)
}

// uninstall uninstalls obj's release, unless its kind is being removed, and
// removes the finalizer.
func (r *Reconciler) uninstall(ctx context.Context, obj *unstructured.Unstructured) error {
	if !controllerutil.ContainsFinalizer(obj, kraanv1.ChartFinalizer) {
		return nil
	}
	why, kindRemoved, err := r.kindRemoved(ctx)
	switch {
	case err != nil:
		return err
	case kindRemoved:
		if err := r.orphan(ctx, obj); err != nil {
			return err
		}
	default:
		if err := r.Engine.Uninstall(ctx, r.targetOf(obj), actionsFor(obj)); err != nil {
			return err
		}
	}
	controllerutil.RemoveFinalizer(obj, kraanv1.ChartFinalizer)
	if err := r.Update(ctx, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if kindRemoved {
		msg := fmt.Sprintf("%s %s/%s deleted without uninstalling its release, whose objects stay in place: %s",
			obj.GetKind(), obj.GetNamespace(), obj.GetName(), why)
		r.Events.Warning(obj, kraanv1.ReasonUninstallSkipped, msg)
		ctrl.LoggerFrom(ctx).Info("Left the release installed", "why", why)
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("Uninstalled release")
	return nil
}

// kindRemoved says whether the watched kind's CRD is being deleted (see
// kit.KindBeingRemoved).
func (r *Reconciler) kindRemoved(ctx context.Context) (string, bool, error) {
	gvk := r.Watch.GroupVersionKind()
	mapping, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// The kind no longer maps: its CRD is gone.
		return fmt.Sprintf("the %s kind is no longer served: %v", gvk.Kind, err), true, nil
	}
	return kit.KindBeingRemoved(ctx, r.APIReader, mapping.Resource.GroupResource())
}

// orphan keeps what the release and the kind's Go half made for obj: the
// owner references to obj go, so the garbage collector leaves them when obj
// is gone, and the release's records stay for the next object of that name.
func (r *Reconciler) orphan(ctx context.Context, obj *unstructured.Unstructured) error {
	current, err := r.Engine.Current(ctx, r.targetOf(obj))
	if err != nil {
		return fmt.Errorf("reading the release's objects to keep them: %w", err)
	}
	objs := make([]client.Object, 0, len(current.Current))
	for _, o := range current.Current {
		objs = append(objs, o)
	}
	if r.Companions != nil {
		objs = append(objs, r.Companions(obj)...)
	}
	return kit.Orphan(ctx, r.APIReader, r.Client, obj.GetUID(), objs)
}

// newObject returns an empty object of the watched kind.
func (r *Reconciler) newObject() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.Watch.GroupVersionKind())
	return obj
}

// targetOf places the release as Operator SDK does: the object's name and
// namespace, stored in that namespace. Every action is confined to the
// watch's bounds and, when a ServiceAccount applies, made as that account of
// the object's namespace, so a tenant's object can do no more than the
// tenant's account could.
func (r *Reconciler) targetOf(obj client.Object) helm.Target {
	t := helm.Target{
		ReleaseName: obj.GetName(), Namespace: obj.GetNamespace(), StorageNamespace: obj.GetNamespace(),
		Owner:  obj.GetUID(),
		Bounds: r.Watch.Bounds(obj.GetNamespace(), obj.GetName()),
	}
	if sa := r.Watch.ServiceAccount(r.DefaultServiceAccount); sa != "" {
		t.Impersonate = "system:serviceaccount:" + obj.GetNamespace() + ":" + sa
	}
	return t
}
