package chartbacked

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

// chartFieldOwner is the field manager that restores edited or deleted
// dependents of chart-backed objects.
const chartFieldOwner = "kraan-operator-chart"

// Options are the settings every chart-backed controller shares.
type Options struct {
	// ControllerOptions are the workers and retry delays.
	kit.ControllerOptions
	// DefaultServiceAccount is impersonated when a watch names no
	// ServiceAccount (--default-service-account).
	DefaultServiceAccount string
	// ExtraConditions are conditions another controller writes on the
	// kind's objects (the Go half of a hybrid kind) that count towards
	// Ready; the reconciler keeps them as they are.
	ExtraConditions []kit.Owned
	// Dependents is the cache the watches on the objects releases render
	// read (NewDependentsCache), shared by every chart-backed controller;
	// nil starts one for this controller, over WatchNamespaces.
	Dependents cache.Cache
	// WatchNamespaces limits the cache of dependents Setup starts; empty is
	// all namespaces.
	WatchNamespaces []string
	// Companions are the objects the Go half of a hybrid kind makes for an
	// object and owns (a Habitat's peer list and ring key); they stay, as
	// the release's objects do, when the kind is removed.
	Companions func(*unstructured.Unstructured) []client.Object
}

// Setup registers the reconciler of watch w with mgr: one Helm release per
// object of the watched kind, run by engine.
func Setup(mgr manager.Manager, engine *helm.Engine, w watches.Watch, opts Options) error {
	r := &Reconciler{
		Client:                mgr.GetClient(),
		APIReader:             mgr.GetAPIReader(),
		Companions:            opts.Companions,
		Engine:                engine,
		Watch:                 w,
		Events:                kit.Events{Recorder: mgr.GetEventRecorder("kraan-operator")},
		DefaultServiceAccount: opts.DefaultServiceAccount,
		summary:               Summary(opts.ExtraConditions...),
		floor:                 opts.IntervalFloor(),
		dependentsCache:       opts.Dependents,
	}
	if r.dependentsCache == nil {
		c, err := NewDependentsCache(mgr, opts.WatchNamespaces)
		if err != nil {
			return err
		}
		r.dependentsCache = c
	}
	return r.setupWithManager(mgr, opts.ControllerOptions)
}

// NewDependentsCache starts, with mgr, the cache of the objects chart-backed
// releases render, which the dependent watches read (watchDependent). It
// holds their metadata only, slimmed (kit.SlimObjectMeta) but with their
// controller reference, which maps an object to its owner: a chart that
// renders a ConfigMap makes the operator watch every ConfigMap of the
// watched namespaces, the tenants' own among them, and none is held whole.
func NewDependentsCache(mgr manager.Manager, watchNamespaces []string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform:  slimDependent,
		DefaultNamespaces: kit.CacheNamespaces(watchNamespaces),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of chart-backed releases' objects: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of chart-backed releases' objects: %w", err)
	}
	return c, nil
}

// slimDependent keeps of a dependent's metadata what the dependent watches
// read: kit.SlimObjectMeta and the controller reference.
func slimDependent(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, fmt.Errorf("the cache of dependents holds metadata only, got %T", obj)
	}
	meta := kit.SlimObjectMeta(m.ObjectMeta)
	meta.OwnerReferences = kit.ControllerRef(m.OwnerReferences)
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: meta}, nil
}

// setupWithManager registers the reconciler of the watch's kind. Dependent
// kinds are watched as releases render them (see reconcileDependents).
func (r *Reconciler) setupWithManager(mgr manager.Manager, opts kit.ControllerOptions) error {
	r.chartDigest = helm.ChartDigest(r.Watch.LoadedChart)
	r.mgr = mgr
	if r.Mapper == nil {
		r.Mapper = mgr.GetRESTMapper()
	}
	gvk := r.Watch.GroupVersionKind()
	c, err := builder.ControllerManagedBy(mgr).
		Named(strings.ToLower(gvk.Kind)+"."+gvk.Group+"-chart").
		For(r.newObject(), builder.WithPredicates(r.selectorPredicate(), specChangedPredicate())).
		WithOptions(kit.ControllerOptions{
			MaxConcurrentReconciles: r.Watch.Workers(opts.MaxConcurrentReconciles),
			MinRetryDelay:           opts.MinRetryDelay, MaxRetryDelay: opts.MaxRetryDelay,
		}.Controller()).
		Build(r)
	if err != nil {
		return err
	}
	r.controller = c
	return nil
}

// selectorPredicate admits only the objects the watch's selector matches.
func (r *Reconciler) selectorPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Watch.LabelSelector.Matches(labels.Set(o.GetLabels()))
	})
}

// specChangedPredicate ignores status-only updates of the primary object:
// the Habitat controller writes peers as pods come and go, and none of that
// changes the release. Spec (generation), labels (the selector), annotations
// (the Operator SDK options) and the start of a deletion do.
func specChangedPredicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() ||
				!labels.Equals(o.GetLabels(), n.GetLabels()) ||
				!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
				o.GetDeletionTimestamp().IsZero() != n.GetDeletionTimestamp().IsZero()
		},
	}
}

// reconcileDependents watches the kinds of the deployed release's objects and
// restores those deleted or edited since: Helm only writes on install and
// upgrade, so without this a deleted StatefulSet would stay deleted. A
// failure is the pass's (Irreconcilable), retried with back-off.
func (r *Reconciler) reconcileDependents(ctx context.Context, sc *chartScope) (ctrl.Result, error) {
	if err := r.restoreDependents(ctx, sc.obj, sc); err != nil {
		sc.runErr = err
		return ctrl.Result{}, outcome.Transient(kraanv1.ReasonReconcileError, err)
	}
	return ctrl.Result{}, nil
}

// restoreDependents is reconcileDependents' work.
func (r *Reconciler) restoreDependents(ctx context.Context, owner *unstructured.Unstructured, sc *chartScope) error {
	rel := sc.result.LatestRevision(helm.Desired{})
	if !r.Watch.WatchesDependents() || rel == nil || sc.result.Next != helm.ActionNone {
		return nil
	}
	if rel.Trust != helm.RecordVerified {
		// Only a record the operator signed is replayed: one it cannot
		// verify may name any object of the cluster. The next upgrade
		// writes a signed record.
		ctrl.LoggerFrom(ctx).Info("Not restoring the release's objects: its record is not signed by this operator",
			"revision", rel.Version, "trust", string(rel.Trust))
		return nil
	}
	objs, err := ssautil.ReadObjects(strings.NewReader(rel.Manifest))
	if err != nil {
		return err
	}
	bounds := r.Watch.Bounds(owner.GetNamespace(), owner.GetName())
	var errs []error
	for _, obj := range objs {
		// The record is read back from storage: what it holds is restored
		// only within the bounds the release was rendered in.
		if err := bounds.CheckObject(obj, r.Mapper); err != nil {
			errs = append(errs, fmt.Errorf("not restoring: %w", err))
			continue
		}
		if err := r.watchDependent(obj.GroupVersionKind()); err != nil {
			errs = append(errs, err)
		}
		if obj.GetNamespace() == "" && r.isNamespaced(obj) {
			obj.SetNamespace(owner.GetNamespace())
		}
		// Helm's metadata, as Helm applied it: the manifest holds the
		// chart's labels only, and Helm 4 uninstalls only what carries it.
		helm.MarkOwned(obj, rel.Name, rel.Namespace)
		//nolint:staticcheck // client.Apply with unstructured objects is the supported way here
		if err := r.Patch(ctx, obj, client.Apply, client.FieldOwner(chartFieldOwner), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s %s: %w", obj.GetKind(), obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) isNamespaced(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	mapping, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil && mapping.Scope.Name() == "namespace"
}

// watchDependent starts, once per kind, a watch that enqueues the owner of a
// changed or deleted dependent. It watches metadata only, from the cache of
// dependents (NewDependentsCache): a change is all it needs to notice, and
// restoreDependents applies from the release's record, not from the cache.
func (r *Reconciler) watchDependent(gvk schema.GroupVersionKind) error {
	if _, seen := r.dependents.LoadOrStore(gvk, true); seen || r.controller == nil {
		return nil
	}
	owner := r.newObject()
	mgr := r.mgr
	src := source.Kind(r.dependentsCache, kit.MetadataOf(gvk),
		handler.TypedEnqueueRequestForOwner[*metav1.PartialObjectMetadata](mgr.GetScheme(), mgr.GetRESTMapper(), owner, handler.OnlyControllerOwner()),
		dependentPredicate())
	if err := r.controller.Watch(src); err != nil {
		r.dependents.Delete(gvk)
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	return nil
}

// dependentPredicate ignores status-only updates of objects that have a
// generation: a StatefulSet's status changes with every pod, and none of
// those changes can be drift of what the chart rendered.
func dependentPredicate() predicate.TypedPredicate[*metav1.PartialObjectMetadata] {
	return predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
		UpdateFunc: func(e event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool {
			if e.ObjectNew.GetGeneration() == 0 {
				return e.ObjectNew.GetResourceVersion() != e.ObjectOld.GetResourceVersion()
			}
			return e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() ||
				!labels.Equals(e.ObjectNew.GetLabels(), e.ObjectOld.GetLabels())
		},
	}
}
