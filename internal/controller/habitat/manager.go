package habitat

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
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
	// WatchNamespaces limits the Habitat cache (pods, peer lists,
	// StatefulSets) to these namespaces; empty is all.
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

// setupWithManager registers the reconciler with mgr. Pods, peer lists and
// StatefulSets come from a cache of its own (newHabitatCache) that holds
// only what carries the chart's labels, slimmed to what this controller
// reads: a cluster's other pods are never listed or watched (Habitat
// operator issue "Only watch for our own Pods"), and no ConfigMap's data is
// held, not even a peer list's. Secrets are watched as metadata, in the
// manager's cache.
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, opts Options) error {
	habitatCache, err := newHabitatCache(mgr, opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(habitatCache); err != nil {
		return fmt.Errorf("adding the Habitat cache: %w", err)
	}
	r.Group = habitatCache
	return ctrl.NewControllerManagedBy(mgr).
		// The spec is all this controller reads of a Habitat: the
		// chart-backed controller's status writes, and this one's, need
		// no pass.
		For(&habitatv1.Habitat{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Kind(habitatCache, &appsv1.StatefulSet{},
			handler.TypedEnqueueRequestForOwner[*appsv1.StatefulSet](mgr.GetScheme(), mgr.GetRESTMapper(),
				&habitatv1.Habitat{}, handler.OnlyControllerOwner()),
			predicate.TypedFuncs[*appsv1.StatefulSet]{UpdateFunc: readyReplicasChanged})).
		WatchesRawSource(source.Kind(habitatCache, &corev1.Pod{},
			handler.TypedEnqueueRequestsFromMapFunc(r.requestsForPodChange),
			predicate.TypedFuncs[*corev1.Pod]{UpdateFunc: peerChanged})).
		// A peer list edited or deleted by hand is written again.
		WatchesRawSource(source.Kind(habitatCache, &corev1.ConfigMap{},
			handler.TypedEnqueueRequestsFromMapFunc(r.requestsForPeerListChange),
			predicate.TypedFuncs[*corev1.ConfigMap]{UpdateFunc: peerListChanged})).
		// A named Secret appearing, or gaining its key, makes the Habitat Ready.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.requestsForSecretChange),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(opts.Controller()).
		Complete(r)
}

// readyReplicasChanged passes the StatefulSet updates status.readyReplicas
// reports: the rest of its status changes with every pod.
func readyReplicasChanged(e event.TypedUpdateEvent[*appsv1.StatefulSet]) bool {
	return e.ObjectOld.Status.ReadyReplicas != e.ObjectNew.Status.ReadyReplicas
}

// peerChanged passes the pod updates that can change a peer list: its
// phase, IP, group or deletion.
func peerChanged(e event.TypedUpdateEvent[*corev1.Pod]) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.Status.Phase != n.Status.Phase || o.Status.PodIP != n.Status.PodIP ||
		o.Labels[PeerGroupLabel] != n.Labels[PeerGroupLabel] || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}

// peerListChanged passes the updates of a peer list that change what
// reconcilePeers writes there (its digest in the cache).
func peerListChanged(e event.TypedUpdateEvent[*corev1.ConfigMap]) bool {
	return e.ObjectOld.Annotations[peerListDigestAnnotation] != e.ObjectNew.Annotations[peerListDigestAnnotation] ||
		e.ObjectOld.Labels[PeerGroupLabel] != e.ObjectNew.Labels[PeerGroupLabel]
}

// requestsForPodChange enqueues every Habitat of the pod's peer group: a pod
// starting or dying changes the list all of them share.
func (r *Reconciler) requestsForPodChange(ctx context.Context, pod *corev1.Pod) []reconcile.Request {
	return r.requestsForGroup(ctx, pod.Namespace, pod.Labels[PeerGroupLabel])
}

// requestsForPeerListChange enqueues the Habitats of a peer list that was
// edited or deleted by hand, so it is rewritten. Other ConfigMaps carrying
// a peer group label enqueue nothing.
func (r *Reconciler) requestsForPeerListChange(ctx context.Context, obj *corev1.ConfigMap) []reconcile.Request {
	group := obj.GetLabels()[PeerGroupLabel]
	if obj.GetName() != PeerConfigMapName(group) {
		return nil
	}
	return r.requestsForGroup(ctx, obj.GetNamespace(), group)
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
