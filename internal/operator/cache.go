package operator

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// CacheOptions are the manager's cache options: limited to watchNamespaces
// (empty is all), so the operator needs only Roles in those namespaces for
// namespaced kinds, and without managedFields: nothing reads them, and they
// are often the larger part of an object (a third of the cache at 1000
// releases).
//
// Secrets are cached as metadata only, and all of them: the in-sync check
// reads Helm's release records (owner=helm Secrets) there instead of
// listing them per resync, and a Habitat turns Ready when a Secret it names
// appears. Of the objects cached as metadata (see kit.SlimMetadata) only
// what the operator reads is kept. The watches that need a labelled few of a
// kind the cluster holds thousands of — the valuesFrom ConfigMaps labelled
// for watching, the workloads a layer applied, the Habitat controller's
// pods and peer lists — use caches of their own (kit.NewSelectedMetadataCache).
func CacheOptions(watchNamespaces []string) cache.Options {
	return cache.Options{
		DefaultTransform:  kit.SlimMetadata(cache.TransformStripManagedFields()),
		DefaultNamespaces: kit.CacheNamespaces(watchNamespaces),
	}
}
