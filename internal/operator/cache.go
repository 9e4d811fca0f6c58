package operator

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
// what the chart labelled.
func CacheOptions(watchNamespaces []string) cache.Options {
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if len(watchNamespaces) == 0 {
		return opts
	}
	opts.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range watchNamespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}
