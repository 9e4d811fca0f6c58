package habitat

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// Labels the Habitat chart puts on every pod; keep in sync with
// helm-charts/habitat/templates/_helpers.tpl.
const (
	// HabitatLabel names the Habitat a pod belongs to.
	HabitatLabel = "habitat.kraan.io/habitat"
	// PeerGroupLabel names the pod's peer group (see PeerGroup).
	PeerGroupLabel = "habitat.kraan.io/ring"
	// PeerWatchFileKey is the ConfigMap key the pods mount as their peer file.
	PeerWatchFileKey = "peer-watch-file"
)

// PeerGroup names the supervisors that gossip together: all Habitats of a
// namespace naming the same ring, so binds work across them, or a Habitat
// alone when it names none, so unrelated services never join each other.
func PeerGroup(h *habitatv1.Habitat) string {
	if h.Spec.Service.Ring != "" {
		return "ring." + h.Spec.Service.Ring
	}
	return "habitat." + h.Name
}

// PeerConfigMapName is the ConfigMap holding a peer group's peer list.
func PeerConfigMapName(group string) string {
	return "hab-peers." + group
}

// reconcilePeers writes the peer group's Running pod IPs, one per line, into
// the group's ConfigMap. Every Habitat of the group owns the ConfigMap, so it
// goes with the last of them.
func (r *Reconciler) reconcilePeers(ctx context.Context, sc *habitatScope, obj *habitatv1.Habitat) error {
	pods := &corev1.PodList{}
	if err := r.Group.List(ctx, pods, client.InNamespace(obj.Namespace), client.MatchingLabels{PeerGroupLabel: sc.group}); err != nil {
		return fmt.Errorf("listing pods of %s: %w", sc.group, err)
	}
	sc.peers = runningPeerIPs(pods.Items)
	owners, err := r.groupMembers(ctx, obj.Namespace, sc.group)
	if err != nil {
		return err
	}
	if len(owners) == 0 {
		// Every Habitat of the group is being deleted (this pass read obj
		// before its deletion reached the cache): a peer list written now
		// would have no owner and outlive the group for good. Garbage
		// collection removes the one there is with its last owner.
		return nil
	}
	key := client.ObjectKey{Namespace: obj.Namespace, Name: PeerConfigMapName(sc.group)}
	if err := r.writePeerList(ctx, key, sc.group, sc.peers, owners); err != nil {
		return fmt.Errorf("writing peer list %s: %w", key.Name, err)
	}
	return nil
}

// writePeerList writes the peer list at key when it is not as wanted. The
// Habitat cache holds no ConfigMap's data, only the digest of a peer list's
// (slimPeerList): an unchanged list costs no request, a changed or
// hand-edited one is read from the API server and written whole, and a
// missing one is created.
func (r *Reconciler) writePeerList(ctx context.Context, key client.ObjectKey, group string, peers []string,
	owners []metav1.OwnerReference) error {
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	setPeerList(want, group, peers, owners)
	cached := &corev1.ConfigMap{}
	err := r.Group.Get(ctx, key, cached)
	switch {
	case err == nil && cached.Annotations[peerListDigestAnnotation] == peerListDigest(want):
		return nil
	case apierrors.IsNotFound(err):
		if err = r.Create(ctx, want); !apierrors.IsAlreadyExists(err) {
			return err
		}
		// The cache holds only labelled peer lists (PeerGroupSelector):
		// this one lost its label by hand, or the cache has not seen it
		// yet. It is updated below, label included.
	case err != nil:
		return err
	}
	live := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, key, live); err != nil {
		return err
	}
	if peerListDigest(live) == peerListDigest(want) {
		return nil // the cache was behind
	}
	setPeerList(live, group, peers, owners)
	return r.Update(ctx, live)
}

// setPeerList makes cm the peer list of group: its label, the pods' IPs one
// per line, and every Habitat of the group as an owner.
func setPeerList(cm *corev1.ConfigMap, group string, peers []string, owners []metav1.OwnerReference) {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[PeerGroupLabel] = group
	cm.Data = map[string]string{PeerWatchFileKey: strings.Join(peers, "\n")}
	cm.BinaryData = nil
	cm.OwnerReferences = owners
}

// PeerGroupSelector selects what carries a peer group label: the chart's
// pods and the peer lists this controller writes, the only pods and
// ConfigMaps it reads whole.
func PeerGroupSelector() labels.Selector {
	return kit.HasLabel(PeerGroupLabel)
}

// groupMembers returns owner references to the live Habitats of a group.
func (r *Reconciler) groupMembers(ctx context.Context, namespace, group string) ([]metav1.OwnerReference, error) {
	list := &habitatv1.HabitatList{}
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Habitats: %w", err)
	}
	var refs []metav1.OwnerReference
	for i := range list.Items {
		h := &list.Items[i]
		if PeerGroup(h) != group || !h.DeletionTimestamp.IsZero() {
			continue
		}
		refs = append(refs, habitatOwnerRef(h))
	}
	return refs, nil
}
