package operator

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// CacheOptions are the manager's cache options: limited to watchNamespaces
// (empty is all), so the operator needs only Roles in those namespaces for
// namespaced kinds, and without managedFields: nothing reads them, and they
// are often the larger part of an object (a third of the cache at 1000
// releases).
//
// ConfigMaps and Secrets are cached as metadata only, and all of them: a
// change of a valuesFrom source is noticed by its resourceVersion, and the
// in-sync check reads Helm's release records (owner=helm Secrets) there
// instead of listing them per resync. The Habitat controller's peer lists
// and pods, which it reads whole, live in a cache of its own that holds only
// what the chart labelled. Of the objects cached as metadata (see
// slimMetadata) only what the operator reads is kept.
func CacheOptions(watchNamespaces []string) cache.Options {
	return cache.Options{
		DefaultTransform:  slimMetadata(cache.TransformStripManagedFields()),
		DefaultNamespaces: kit.CacheNamespaces(watchNamespaces),
	}
}

// slimMetadata keeps of an object cached as metadata only (ConfigMaps,
// Secrets, the workloads a layer waits for: thousands each) what the
// operator reads: its identity, resourceVersion, generation, labels (layer
// ownership, Helm's release records) and deletion. Annotations, owner
// references and finalizers, as large as the rest (Helm's meta.helm.sh/*),
// are dropped. Other objects go through next.
func slimMetadata(next toolscache.TransformFunc) toolscache.TransformFunc {
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
