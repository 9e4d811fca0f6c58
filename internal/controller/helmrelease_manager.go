package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Field indexes on HelmReleases, used by the mappers to find the releases an
// object change concerns without listing them all.
const (
	// dependsOnIndex holds "<namespace>/<name>" of each dependency.
	dependsOnIndex = ".spec.dependsOn"
	// valuesFromIndex holds "<Kind>/<name>" of each valuesFrom object (same namespace).
	valuesFromIndex = ".spec.valuesFrom"
)

// SetupWithManager registers the reconciler, its indexes and watches.
func (r *HelmReleaseReconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &kraanv1.HelmRelease{}, dependsOnIndex, dependsOnKeys); err != nil {
		return fmt.Errorf("indexing dependsOn: %w", err)
	}
	if err := indexer.IndexField(ctx, &kraanv1.HelmRelease{}, valuesFromIndex, valuesFromKeys); err != nil {
		return fmt.Errorf("indexing valuesFrom: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&kraanv1.HelmRelease{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Dependents start as soon as a dependency turns Ready, not after a requeue delay.
		Watches(&kraanv1.HelmRelease{}, handler.EnqueueRequestsFromMapFunc(r.requestsForDependency)).
		// Only metadata of ConfigMaps and Secrets is cached: a change of their
		// resourceVersion is all a values change needs to be noticed.
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.requestsForValuesFrom("ConfigMap")),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.requestsForValuesFrom("Secret")),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

func dependsOnKeys(obj client.Object) []string {
	hr := obj.(*kraanv1.HelmRelease)
	keys := make([]string, 0, len(hr.Spec.DependsOn))
	for _, d := range hr.Spec.DependsOn {
		ns := d.Namespace
		if ns == "" {
			ns = hr.Namespace
		}
		keys = append(keys, ns+"/"+d.Name)
	}
	return keys
}

func valuesFromKeys(obj client.Object) []string {
	hr := obj.(*kraanv1.HelmRelease)
	keys := make([]string, 0, len(hr.Spec.ValuesFrom))
	for _, v := range hr.Spec.ValuesFrom {
		keys = append(keys, v.Kind+"/"+v.Name)
	}
	return keys
}

// requestsForDependency maps a HelmRelease to the releases that depend on it,
// when it is Ready at its current generation.
func (r *HelmReleaseReconciler) requestsForDependency(ctx context.Context, obj client.Object) []reconcile.Request {
	hr := obj.(*kraanv1.HelmRelease)
	if hr.Status.ObservedGeneration != hr.Generation || !isReady(hr.Status.Conditions) {
		return nil
	}
	return r.listRequests(ctx, client.MatchingFields{dependsOnIndex: hr.Namespace + "/" + hr.Name})
}

func (r *HelmReleaseReconciler) requestsForValuesFrom(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return r.listRequests(ctx, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{valuesFromIndex: kind + "/" + obj.GetName()})
	}
}

func (r *HelmReleaseReconciler) listRequests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &kraanv1.HelmReleaseList{}
	if err := r.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HelmReleases for a watch event")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, hr := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&hr)})
	}
	return reqs
}
