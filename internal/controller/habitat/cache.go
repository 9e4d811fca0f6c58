package habitat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// peerListDigestAnnotation is set, in the Habitat cache only, on a peer
// list: the digest of what reconcilePeers writes there (peerListDigest). It
// is never written to the API server.
const peerListDigestAnnotation = "habitat.kraan.io/cached-peer-list-digest"

// newHabitatCache returns the Habitat controller's cache: the pods and
// ConfigMaps that carry a peer group label, and the StatefulSets that carry
// a Habitat label, in the watched namespaces. Those labels select what the
// chart renders and the peer lists this controller writes, but anyone who
// may create a pod or a ConfigMap can set them, so they bound nothing:
// each kind's transform keeps only the fields the controller reads
// (slimPod, slimPeerList, slimStatefulSet), and a ConfigMap's data never
// stays in memory, whoever made it.
func newHabitatCache(mgr ctrl.Manager, opts Options) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:         {Label: PeerGroupSelector(), Transform: slimPod},
			&corev1.ConfigMap{}:   {Label: PeerGroupSelector(), Transform: slimPeerList},
			&appsv1.StatefulSet{}: {Label: kit.HasLabel(HabitatLabel), Transform: slimStatefulSet},
		},
		DefaultTransform:  kit.SlimMetadata(cache.TransformStripManagedFields()),
		DefaultNamespaces: kit.CacheNamespaces(opts.WatchNamespaces),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the Habitat cache: %w", err)
	}
	return c, nil
}

// habitatMeta is what the Habitat controller reads of the metadata of the
// objects in its cache: kit.SlimObjectMeta with its own labels only, which
// its lists select by.
func habitatMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := kit.SlimObjectMeta(m)
	out.Labels = nil
	for _, key := range []string{HabitatLabel, PeerGroupLabel} {
		if v, ok := m.Labels[key]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[key] = v
		}
	}
	return out
}

// slimPod keeps of a pod its phase and IP (runningPeerIPs): a pod's spec is
// most of it.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone: nothing to slim
	}
	return &corev1.Pod{ObjectMeta: habitatMeta(pod.ObjectMeta),
		Status: corev1.PodStatus{Phase: pod.Status.Phase, PodIP: pod.Status.PodIP}}, nil
}

// slimStatefulSet keeps of a StatefulSet its controller reference (the
// watch maps it to its Habitat, observeStatefulSet checks it) and its ready
// replicas.
func slimStatefulSet(obj any) (any, error) {
	sts, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return obj, nil
	}
	meta := habitatMeta(sts.ObjectMeta)
	meta.OwnerReferences = kit.ControllerRef(sts.OwnerReferences)
	return &appsv1.StatefulSet{ObjectMeta: meta, Status: appsv1.StatefulSetStatus{ReadyReplicas: sts.Status.ReadyReplicas}}, nil
}

// slimPeerList keeps no ConfigMap's data. A ConfigMap named as the peer
// list of the group its label names (PeerConfigMapName) keeps the digest
// of what reconcilePeers would compare (peerListDigest), so an unchanged
// list is not written again and one edited by hand is; any other ConfigMap
// carrying the label keeps its name only.
func slimPeerList(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	out := &corev1.ConfigMap{ObjectMeta: habitatMeta(cm.ObjectMeta)}
	if group := cm.Labels[PeerGroupLabel]; cm.Name == PeerConfigMapName(group) {
		out.Annotations = map[string]string{peerListDigestAnnotation: peerListDigest(cm)}
	}
	return out, nil
}

// peerListDigest digests what reconcilePeers writes on a peer list: its
// group label, data and owners.
func peerListDigest(cm *corev1.ConfigMap) string {
	type owner struct {
		APIVersion, Kind, Name string
		UID                    string
		Controller, Block      *bool
	}
	owners := make([]owner, 0, len(cm.OwnerReferences))
	for _, o := range cm.OwnerReferences {
		owners = append(owners, owner{o.APIVersion, o.Kind, o.Name, string(o.UID), o.Controller, o.BlockOwnerDeletion})
	}
	data, err := json.Marshal(struct {
		Group      string
		Data       map[string]string
		BinaryData map[string][]byte
		Owners     []owner
	}{cm.Labels[PeerGroupLabel], cm.Data, cm.BinaryData, owners})
	if err != nil {
		return "" // cannot happen: strings, bytes and booleans
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// controlledBy reports whether obj's controller is Habitat h.
func controlledBy(obj metav1.Object, h *habitatv1.Habitat) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == h.UID && ref.Kind == habitatv1.Kind
}
