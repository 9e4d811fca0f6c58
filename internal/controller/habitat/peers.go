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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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
	mutate := func(cm *corev1.ConfigMap) func() error {
		return func() error {
			if cm.Labels == nil {
				cm.Labels = map[string]string{}
			}
			cm.Labels[PeerGroupLabel] = sc.group
			cm.Data = map[string]string{PeerWatchFileKey: strings.Join(sc.peers, "\n")}
			cm.OwnerReferences = owners
			return nil
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err = controllerutil.CreateOrUpdate(ctx, readingFrom{Client: r.Client, reader: r.Group}, cm, mutate(cm))
	if apierrors.IsAlreadyExists(err) {
		// The group cache holds only labelled peer lists
		// (PeerGroupSelector): this one lost its label by hand. Read it
		// from the API server and write it whole again, label included.
		cm = &corev1.ConfigMap{}
		if err = r.APIReader.Get(ctx, key, cm); err == nil {
			_ = mutate(cm)()
			err = r.Update(ctx, cm)
		}
	}
	if err != nil {
		return fmt.Errorf("writing peer list %s: %w", key.Name, err)
	}
	return nil
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

// readingFrom is a client whose Get, the one read CreateOrUpdate makes, goes
// to reader.
type readingFrom struct {
	client.Client
	reader client.Reader
}

func (c readingFrom) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}
