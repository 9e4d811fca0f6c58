package habitat

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// Options are the Habitat controller's settings.
type Options struct {
	// ControllerOptions are the workers and retry delays.
	kit.ControllerOptions
	// WatchNamespaces limits the pod cache to these namespaces; empty is all.
	WatchNamespaces []string
}

// Setup registers the Habitat Go controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Events:    kit.Events{Recorder: mgr.GetEventRecorder("kraan-operator")},
	}
	return r.setupWithManager(mgr, opts)
}

// setupWithManager registers the reconciler with mgr. Pods and peer lists
// come from a cache of their own that holds only what carries a peer group
// label: a cluster's other pods are never listed or watched (Habitat
// operator issue "Only watch for our own Pods"), and its other ConfigMaps
// are cached as metadata only, by the manager.
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, opts Options) error {
	groupCache, err := newGroupCache(mgr, opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(groupCache); err != nil {
		return fmt.Errorf("adding the Habitat peer group cache: %w", err)
	}
	r.Group = groupCache
	return ctrl.NewControllerManagedBy(mgr).
		For(&habitatv1.Habitat{}).
		Owns(&appsv1.StatefulSet{}).
		WatchesRawSource(source.Kind(groupCache, &corev1.Pod{},
			handler.TypedEnqueueRequestsFromMapFunc(r.requestsForPodChange))).
		// A peer list edited or deleted by hand is written again.
		WatchesRawSource(source.Kind(groupCache, &corev1.ConfigMap{},
			handler.TypedEnqueueRequestsFromMapFunc(r.requestsForPeerListChange))).
		// A named Secret appearing, or gaining its key, makes the Habitat Ready.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.requestsForSecretChange),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(opts.Controller()).
		Complete(r)
}

// newGroupCache returns a cache of the pods and ConfigMaps that carry a peer
// group label, in the watched namespaces.
func newGroupCache(mgr ctrl.Manager, opts Options) (cache.Cache, error) {
	cacheOpts := cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:       {Label: PeerGroupSelector()},
			&corev1.ConfigMap{}: {Label: PeerGroupSelector()},
		},
		DefaultTransform:  cache.TransformStripManagedFields(),
		DefaultNamespaces: kit.CacheNamespaces(opts.WatchNamespaces),
	}
	c, err := cache.New(mgr.GetConfig(), cacheOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the Habitat peer group cache: %w", err)
	}
	return c, nil
}

// requestsForPodChange enqueues every Habitat of the pod's peer group: a pod
// starting or dying changes the list all of them share.
func (r *Reconciler) requestsForPodChange(ctx context.Context, pod *corev1.Pod) []reconcile.Request {
	return r.requestsForGroup(ctx, pod.Namespace, pod.Labels[PeerGroupLabel])
}

// requestsForPeerListChange enqueues the Habitats of a peer list that was
// edited or deleted by hand, so it is rewritten.
func (r *Reconciler) requestsForPeerListChange(ctx context.Context, obj *corev1.ConfigMap) []reconcile.Request {
	return r.requestsForGroup(ctx, obj.GetNamespace(), obj.GetLabels()[PeerGroupLabel])
}

// requestsForGroup lists the Habitats of a peer group from the cache.
func (r *Reconciler) requestsForGroup(ctx context.Context, namespace, group string) []reconcile.Request {
	if group == "" {
		return nil
	}
	list := &habitatv1.HabitatList{}
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Habitats for a peer group", "group", group)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if PeerGroup(&list.Items[i]) == group {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
