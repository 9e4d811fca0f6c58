package operator

import (
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
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
// Every cache the operator starts keeps, of an object it did not create,
// only the fields it reads: a selector is no bound, since whoever may
// create an object can give it any label, and a ConfigMap or Secret holds
// up to a megabyte. So:
//   - Secrets are cached as metadata only (kit.SlimMetadata), all of them:
//     the in-sync check reads Helm's release records (owner=helm Secrets)
//     there instead of listing them per resync, and a Habitat turns Ready
//     when a Secret it names appears; values are read from the API server
//     when used;
//   - the Flux sources that serve artifacts keep their status only
//     (slimArtifactSource): their spec is the tenant's (a GitRepository's
//     spec.ignore is free text) and nothing reads it;
//   - the watches that need a labelled few of a kind the cluster holds
//     thousands of — the valuesFrom ConfigMaps labelled for watching, the
//     workloads a layer applied, the Habitat controller's pods, peer lists
//     and StatefulSets, the objects chart-backed releases render — use
//     caches of their own, of metadata (kit.NewSelectedMetadataCache,
//     chartbacked.NewDependentsCache) or slimmed to what is read (the
//     Habitat controller's).
//
// The operator's own kinds (HelmRelease, AddonsLayer, Habitat and the
// other chart-backed kinds) and HelmRepositories, whose spec the chart
// fetcher reads, are cached whole.
func CacheOptions(watchNamespaces []string) cache.Options {
	// One transform for every kind rather than ByObject entries for the
	// Flux sources: a ByObject entry needs the kind's REST mapping when the
	// manager is made, and a cluster without Flux has none (the operator
	// must start there, and pick the kinds up once Flux is installed).
	slim := kit.SlimMetadata(cache.TransformStripManagedFields())
	return cache.Options{
		DefaultTransform: func(obj any) (any, error) {
			obj, err := slimArtifactSource(obj)
			if err != nil {
				return nil, err
			}
			return slim(obj)
		},
		DefaultNamespaces: kit.CacheNamespaces(watchNamespaces),
	}
}

// slimArtifactSource keeps of a Flux source that serves an artifact what
// the operator reads: its identity and generation (kit.SlimObjectMeta) and
// its status (artifact, conditions, observed generation).
var slimArtifactSource toolscache.TransformFunc = func(obj any) (any, error) {
	switch s := obj.(type) {
	case *sourcev1.GitRepository:
		return &sourcev1.GitRepository{TypeMeta: s.TypeMeta, ObjectMeta: kit.SlimObjectMeta(s.ObjectMeta), Status: s.Status}, nil
	case *sourcev1.OCIRepository:
		return &sourcev1.OCIRepository{TypeMeta: s.TypeMeta, ObjectMeta: kit.SlimObjectMeta(s.ObjectMeta), Status: s.Status}, nil
	case *sourcev1.Bucket:
		return &sourcev1.Bucket{TypeMeta: s.TypeMeta, ObjectMeta: kit.SlimObjectMeta(s.ObjectMeta), Status: s.Status}, nil
	case *sourcev1.HelmChart:
		return &sourcev1.HelmChart{TypeMeta: s.TypeMeta, ObjectMeta: kit.SlimObjectMeta(s.ObjectMeta), Status: s.Status}, nil
	}
	return obj, nil // a tombstone
}
