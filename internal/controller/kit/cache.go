package kit

import (
	"fmt"

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
// workloads a layer waits for: thousands each) what the operator reads: its
// identity, resourceVersion, generation, labels (layer ownership, Helm's
// release records) and deletion. Annotations, owner references and
// finalizers, as large as the rest (Helm's meta.helm.sh/*), are dropped.
// Other objects go through next.
func SlimMetadata(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return next(obj)
		}
		return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			Generation: m.Generation, Labels: m.Labels, DeletionTimestamp: m.DeletionTimestamp,
		}}, nil
	}
}
