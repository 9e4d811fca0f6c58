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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

// ChartFinalizer keeps a chart-backed object until its release is uninstalled.
const ChartFinalizer = "kraan.io/uninstall-helm-release"

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

	chartDigest string
	// summary derives Ready from Operator SDK's conditions and the kind's
	// registered extra ones.
	summary kit.Summary
	// controller and dependents let Reconcile add a watch for each kind a
	// release renders, the first time it sees the kind.
	controller controller.Controller
	mgr        manager.Manager
	dependents sync.Map
}

// chartScope carries what the steps of one pass observed. reconcileRelease
// fills everything; the status setters only read it.
type chartScope struct {
	// result is the engine's run; Latest is the release now in storage.
	result helm.Result
	// valuesErr is set when the spec could not be turned into values.
	valuesErr error
	// runErr is the engine's error.
	runErr error
}

// Reconcile brings one object's release to its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.newObject()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Watch.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
		return ctrl.Result{}, nil
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, obj)
	}
	patcher := kit.NewPatcher(r.Client, obj)
	// The finalizer must be stored before the first release exists, or a
	// quick delete would leave the release behind.
	if err := kit.EnsureFinalizer(ctx, r.Client, obj, ChartFinalizer, patcher); err != nil {
		return ctrl.Result{}, err
	}
	sc := &chartScope{}
	r.reconcileRelease(ctx, sc, obj)
	if sc.runErr == nil && sc.valuesErr == nil {
		if err := r.reconcileDependents(ctx, obj, sc); err != nil {
			sc.runErr = err
		}
	}
	if err := r.writeStatus(ctx, obj, sc); err != nil {
		return ctrl.Result{}, err
	}
	r.recordFailures(obj, sc)
	return chartResult(sc, reconcilePeriodFor(obj, r.Watch.ResyncPeriod()))
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

// chartResult decides the requeue. A spec the overrides cannot apply to
// fails the same way until it changes, and its update brings the object
// back, so it is not retried; engine errors back off (controller-runtime
// ignores, and warns about, a period returned with an error); a success
// waits for the watch's reconcilePeriod.
func chartResult(sc *chartScope, period time.Duration) (ctrl.Result, error) {
	switch {
	case waitsForNewSpec(sc):
		return ctrl.Result{}, nil
	case tampered(sc.runErr):
		// Stalled: retrying at once cannot help; look again each period,
		// in case the record was restored.
		return ctrl.Result{RequeueAfter: period}, nil
	case sc.runErr != nil:
		return ctrl.Result{}, sc.runErr
	}
	return ctrl.Result{RequeueAfter: period}, nil
}

// reconcileRelease turns the spec into values and runs the release.
func (r *Reconciler) reconcileRelease(ctx context.Context, sc *chartScope, obj *unstructured.Unstructured) {
	spec, _, err := unstructured.NestedMap(obj.Object, "spec")
	if err != nil {
		sc.valuesErr = fmt.Errorf("reading .spec: %w", err)
		return
	}
	values, err := r.Watch.Values(spec)
	if err != nil {
		sc.valuesErr = err
		return
	}
	sc.result, sc.runErr = r.Engine.Run(ctx, helm.Request{
		Target:       r.targetOf(obj),
		Desired:      helm.Desired{Chart: r.Watch.LoadedChart, ChartDigest: r.chartDigest, Values: values},
		Spec:         releaseSpecFor(obj),
		PostRenderer: r.postRenderer(obj),
	})
	if sc.runErr == nil && sc.result.Next == helm.ActionStalled {
		sc.runErr = failedActions(sc.result)
	}
}

// reconcileDelete uninstalls the release, then lets the object go.
func (r *Reconciler) reconcileDelete(ctx context.Context, obj *unstructured.Unstructured) error {
	if !controllerutil.ContainsFinalizer(obj, ChartFinalizer) {
		return nil
	}
	if err := r.Engine.Uninstall(ctx, r.targetOf(obj), releaseSpecFor(obj)); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(obj, ChartFinalizer)
	if err := r.Update(ctx, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("Uninstalled release")
	return nil
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
		Bounds: r.Watch.Bounds(obj.GetNamespace(), obj.GetName()),
	}
	if sa := r.Watch.ServiceAccount(r.DefaultServiceAccount); sa != "" {
		t.Impersonate = "system:serviceaccount:" + obj.GetNamespace() + ":" + sa
	}
	return t
}

// waitsForNewSpec reports a terminal configuration error: only an update of
// the object can change the outcome.
func waitsForNewSpec(sc *chartScope) bool {
	return sc.valuesErr != nil
}
