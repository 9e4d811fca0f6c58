package kit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheNamespaces is a cache's DefaultNamespaces for watchNamespaces: nil,
// every namespace, when there are none.
func CacheNamespaces(watchNamespaces []string) map[string]cache.Config {
	if len(watchNamespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(watchNamespaces))
	for _, ns := range watchNamespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// NewSelectedMetadataCache starts, with mgr, a cache of its own holding the
// metadata (slimmed, see SlimMetadata) of the objects of kinds in
// watchNamespaces that match their kind's selector, and returns it for
// source.Kind watches on metav1.PartialObjectMetadata. A selector set on the
// manager's cache would apply to every informer of the kind — the chart-backed
// controllers' watches on the objects their charts render, the Habitat
// controller's StatefulSets — so a watch that needs only a labelled few of a
// kind the cluster holds thousands of (a wave of releases' Deployments and
// ConfigMaps) keeps them in a cache of its own.
func NewSelectedMetadataCache(mgr ctrl.Manager, name string, watchNamespaces []string,
	kinds map[schema.GroupVersionKind]labels.Selector) (cache.Cache, error) {
	byObject := make(map[client.Object]cache.ByObject, len(kinds))
	for gvk, sel := range kinds {
		byObject[MetadataOf(gvk)] = cache.ByObject{Label: sel}
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), ByObject: byObject,
		DefaultTransform: SlimMetadata(cache.TransformStripManagedFields()), DefaultNamespaces: CacheNamespaces(watchNamespaces),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of %s: %w", name, err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of %s: %w", name, err)
	}
	return c, nil
}

// MetadataOf is an object of kind gvk read or watched as metadata only.
func MetadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// HasLabel selects the objects that carry the label key, whatever its value.
func HasLabel(key string) labels.Selector {
	req, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("label key %q: %v", key, err)) // the keys are constants
	}
	return labels.NewSelector().Add(*req)
}

// SlimMetadata keeps of an object cached as metadata only (Secrets, the
// workloads a layer waits for: thousands each) what the operator reads (see
// SlimObjectMeta). Other objects go through next.
func SlimMetadata(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return next(obj)
		}
		return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: SlimObjectMeta(m.ObjectMeta)}, nil
	}
}

// SlimObjectMeta is what the operator reads of the metadata of an object it
// caches but did not create: its identity, resourceVersion, generation,
// labels (layer ownership, Helm's release records, the selectors of
// watches) and deletion. Annotations, owner references and finalizers, as
// large as the rest (Helm's meta.helm.sh/*), are dropped; so are the labels
// no selector of the operator reads when an object carries more than
// MaxCachedLabelBytes of them (see BoundLabels).
func SlimObjectMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, Labels: BoundLabels(m.Labels), DeletionTimestamp: m.DeletionTimestamp,
	}
}

// MaxCachedLabelBytes bounds the labels the caches keep of one object. The
// API server limits the size of each label, not their number: anyone who may
// create an object in a namespace could make each one carry a megabyte of
// labels, which a metadata cache would hold for every such object. No object
// the operator reads comes near it (a Helm release record has a few hundred
// bytes).
const MaxCachedLabelBytes = 4 << 10

// readLabelKeys are the label keys, and the prefixes of keys, the operator's
// selectors and mappers read: Helm's release records (owner, name, status,
// version), the operator's own (kraan.io/, habitat.kraan.io/), Kraan's layer
// label, Flux's watch and sharding labels.
var (
	readLabelKeys = []string{"owner", "name", "status", "version", "kraan.io/layer", "kraan/layer",
		"habitat.kraan.io/ring", "habitat.kraan.io/habitat", "reconcile.fluxcd.io/watch", "sharding.fluxcd.io/key",
		"app.kubernetes.io/managed-by"}
	readLabelPrefixes = []string{"kraan.io/", ".kraan.io/", "reconcile.fluxcd.io/", "sharding.fluxcd.io/"}
)

// BoundLabels returns labels as they are when they take at most
// MaxCachedLabelBytes. Otherwise it keeps, up to MaxCachedLabelBytes, those
// whose key a selector or mapper of the operator reads (readLabelKeys
// first, then readLabelPrefixes in key order): such an object is no larger
// in the cache than an ordinary one.
func BoundLabels(labels map[string]string) map[string]string {
	if labelBytes(labels) <= MaxCachedLabelBytes {
		return labels
	}
	kept, size := map[string]string{}, 0
	keep := func(k string) {
		if v, ok := labels[k]; ok && size+len(k)+len(v) <= MaxCachedLabelBytes {
			kept[k] = v
			size += len(k) + len(v)
		}
	}
	for _, k := range readLabelKeys {
		keep(k)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if _, done := kept[k]; !done && hasReadPrefix(k) {
			keep(k)
		}
	}
	return kept
}

func labelBytes(labels map[string]string) int {
	size := 0
	for k, v := range labels {
		size += len(k) + len(v)
	}
	return size
}

// hasReadPrefix: the key starts with a prefix of readLabelPrefixes, or is in
// a subdomain of one that starts with a dot (habitat.kraan.io/ring).
func hasReadPrefix(key string) bool {
	for _, p := range readLabelPrefixes {
		if strings.HasPrefix(key, p) || (strings.HasPrefix(p, ".") && strings.Contains(key, p)) {
			return true
		}
	}
	return false
}

// ControllerRef keeps, of refs, only the controller's reference (an object
// has at most one), which the watches mapping an object to its owner read.
func ControllerRef(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, ref := range refs {
		if ref.Controller != nil && *ref.Controller {
			return []metav1.OwnerReference{ref}
		}
	}
	return nil
}
