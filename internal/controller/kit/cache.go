package kit

import "sigs.k8s.io/controller-runtime/pkg/cache"

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
