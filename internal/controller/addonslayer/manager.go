package addonslayer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/fleet"
	"github.com/kraan-io/kraan-operator/internal/layerspec"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// Field indexes on AddonsLayers, so mappers compute requests without listing
// every layer.
const (
	// layerSourceIndex is the layer's source as "<Kind>/<namespace>/<name>".
	layerSourceIndex = ".spec.source.key"
	// layerDependsOnIndex holds the names of the layers a layer depends on.
	layerDependsOnIndex = ".spec.prereqs.dependsOn.name"
)

// artifactGCInterval is how often artifacts no source serves any more are
// removed from the store; they are small, so hourly is plenty.
const artifactGCInterval = time.Hour

// Setup builds the reconciler from mgr and opts and registers it with its
// indexes and watches.
func Setup(mgr ctrl.Manager, opts Options) error {
	r, err := newReconciler(mgr, opts)
	if err != nil {
		return err
	}
	if err := r.addIndexes(mgr); err != nil {
		return err
	}
	if err := mgr.Add(kit.Every(artifactGCInterval, r.collectArtifacts)); err != nil {
		return fmt.Errorf("adding the artifact GC: %w", err)
	}
	owned := handler.EnqueueRequestsFromMapFunc(requestsForOwnedObject)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("addonslayer").
		// Status updates are our own writes; only spec and annotation changes
		// (reconcile.fluxcd.io/requestedAt, the take-over) need a reconcile of
		// the layer itself, and a status Kraan's controller wrote over ours.
		For(&kraanv1.AddonsLayer{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, takeOverChanged()))).
		Watches(&kraanv1.AddonsLayer{}, handler.EnqueueRequestsFromMapFunc(r.requestsForDependencyChange),
			builder.WithPredicates(dependencyStateChanged())).
		Watches(&kraanv1.HelmRelease{}, owned).
		WithOptions(opts.Controller())
	// The workloads a layer applied turning healthy move it on; layer tests
	// are mostly Jobs, whose completion does. Only objects carrying a
	// layer's label are cached, in a cache of their own: the cluster's other
	// workloads (every release's Deployment) would cost memory for nothing.
	kinds := layerWorkloadKinds()
	workloads, err := kit.NewSelectedMetadataCache(mgr, "layers' workloads", nil, kinds)
	if err != nil {
		return err
	}
	ownedWorkload := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
		return requestsForOwnedObject(ctx, o)
	})
	for gvk := range kinds {
		b = b.WatchesRawSource(crsource.Kind(workloads, kit.MetadataOf(gvk), ownedWorkload))
	}
	if r.Fleet.Cache != nil {
		// A cluster registered, relabelled or removed re-places the placed
		// layers; its status (written every check) does not.
		b = b.WatchesRawSource(crsource.Kind(r.Fleet.Cache, &kraanv1.FleetCluster{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, fc *kraanv1.FleetCluster) []reconcile.Request {
				return r.placedLayers(ctx, fc)
			}),
			predicate.Or[*kraanv1.FleetCluster](predicate.TypedGenerationChangedPredicate[*kraanv1.FleetCluster]{},
				predicate.TypedLabelChangedPredicate[*kraanv1.FleetCluster]{})))
	}
	// Flux's sources are watched once the cluster has their CRDs.
	var fluxWatches []kit.OptionalWatch
	for _, src := range []client.Object{&sourcev1.GitRepository{}, &sourcev1.OCIRepository{}, &sourcev1.Bucket{}} {
		fluxWatches = append(fluxWatches, kit.OptionalWatch{Object: src, Handler: handler.EnqueueRequestsFromMapFunc(r.requestsForSourceChange)})
	}
	// A chart-backed object turning Ready moves its layer on, like a HelmRelease.
	for _, gvk := range opts.ChartBackedKinds {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		b = b.WatchesMetadata(obj, owned)
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	return kit.WatchWhenInstalled(mgr, c, fluxWatches)
}

// NewRegistry is the registry of the clusters placed layers run on: the
// FleetClusters and Cluster API Clusters of opts.PlatformNamespaces, with
// connections that judge the chart-backed kinds by their Ready condition.
// FleetClusters are cached from the platform's namespaces only, in a cache
// of their own: a tenant may create the kind (OLM gives namespace editors
// every kind of the operator), and what it creates is never read, so it
// can neither fill a cache nor make a layer run.
func NewRegistry(mgr ctrl.Manager, opts Options) (*fleet.Registry, error) {
	readyKinds := make([]schema.GroupKind, 0, len(opts.ChartBackedKinds))
	for _, gvk := range opts.ChartBackedKinds {
		readyKinds = append(readyKinds, gvk.GroupKind())
	}
	r := &fleet.Registry{APIReader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(),
		Namespaces: opts.PlatformNamespaces, Connections: &fleet.Connections{Scheme: mgr.GetScheme(), ReadyKinds: readyKinds}}
	if len(opts.PlatformNamespaces) == 0 {
		return r, nil // no namespace registers clusters: there are none
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultNamespaces: kit.CacheNamespaces(opts.PlatformNamespaces), DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{&kraanv1.FleetCluster{}: {}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of FleetClusters: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of FleetClusters: %w", err)
	}
	r.Reader, r.Cache = c, c
	return r, nil
}

// newReconciler wires the reconciler's collaborators. The chart-backed kinds
// are judged by the Ready condition their reconciler writes.
func newReconciler(mgr ctrl.Manager, opts Options) (*Reconciler, error) {
	readyKinds := make([]schema.GroupKind, 0, len(opts.ChartBackedKinds))
	for _, gvk := range opts.ChartBackedKinds {
		readyKinds = append(readyKinds, gvk.GroupKind())
	}
	if !mgr.GetScheme().Recognizes(sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind)) {
		return nil, errors.New("the manager's scheme lacks Flux source.toolkit.fluxcd.io/v1: add sourcev1.AddToScheme")
	}
	dir := opts.DataPath
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kraan-artifacts")
	}
	limits := opts.ArtifactLimits
	limits.HostOverride = opts.SourceHostOverride
	store, err := source.New(dir, limits)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	metrics, err := newLayerMetrics(nil)
	if err != nil {
		return nil, err
	}
	snapshots := opts.SnapshotNamespace
	if snapshots == "" && len(opts.PlatformNamespaces) > 0 {
		snapshots = opts.PlatformNamespaces[len(opts.PlatformNamespaces)-1] // the operator's own comes last
	}
	if snapshots == "" {
		snapshots = opts.DefaultSourceNamespace
	}
	registry := opts.Fleet
	if registry == nil {
		if registry, err = NewRegistry(mgr, opts); err != nil {
			return nil, err
		}
	}
	return &Reconciler{
		Fleet: registry, Snapshots: &fleet.Snapshots{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: snapshots},
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Applier: apply.NewApplier(mgr.GetClient(), readyKinds...),
		Store: store, Discovery: disco, Events: kit.Events{Recorder: mgr.GetEventRecorder("kraan-operator")},
		Metrics: metrics, Options: opts, now: time.Now, floor: opts.IntervalFloor(),
	}, nil
}

func (r *Reconciler) addIndexes(mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	err := idx.IndexField(context.Background(), &kraanv1.AddonsLayer{}, layerSourceIndex, func(o client.Object) []string {
		return []string{r.sourceKey(o.(*kraanv1.AddonsLayer))}
	})
	if err != nil {
		return fmt.Errorf("indexing layers by source: %w", err)
	}
	err = idx.IndexField(context.Background(), &kraanv1.AddonsLayer{}, layerDependsOnIndex, func(o client.Object) []string {
		items := o.(*kraanv1.AddonsLayer).Spec.Prereqs.DependsOn
		names := make([]string, 0, len(items))
		for _, item := range items {
			name, _, _ := strings.Cut(item, "@")
			names = append(names, name)
		}
		return names
	})
	if err != nil {
		return fmt.Errorf("indexing layers by dependency: %w", err)
	}
	return nil
}

// requestsForSourceChange maps a Flux source to the layers reading it. It
// only computes requests: fetching happens in the reconcile (Kraan downloaded
// artifacts in its mapper).
func (r *Reconciler) requestsForSourceChange(ctx context.Context, obj client.Object) []reconcile.Request {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" { // typed objects from the cache may lack TypeMeta
		if gvks, _, err := r.Scheme().ObjectKinds(obj); err == nil && len(gvks) > 0 {
			kind = gvks[0].Kind
		}
	}
	return r.layersMatching(ctx, layerSourceIndex, layerspec.IndexKey(kind, obj.GetNamespace(), obj.GetName()))
}

// requestsForDependencyChange maps a layer to the layers that depend on it,
// so a dependent starts as soon as its dependency turns Deployed.
func (r *Reconciler) requestsForDependencyChange(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.layersMatching(ctx, layerDependsOnIndex, obj.GetName())
}

// dependencyStateChanged passes the changes of a layer that its dependents'
// prerequisite check reads (dependencyStateOf): a layer patches its status
// on every change of its objects' health, and each patch used to reconcile
// every layer waiting for it.
func dependencyStateChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*kraanv1.AddonsLayer)
		after, ok2 := e.ObjectNew.(*kraanv1.AddonsLayer)
		return !ok1 || !ok2 || dependencyStateOf(before) != dependencyStateOf(after) ||
			!slices.EqualFunc(before.Status.Clusters, after.Status.Clusters, sameDeployment)
	}}
}

// sameDeployment says whether two entries of a placed layer give its
// dependents on that cluster the same answer (dependencyStateOn).
func sameDeployment(a, b kraanv1.LayerClusterStatus) bool {
	return a.Cluster == b.Cluster && a.State == b.State && a.DeployedVersion == b.DeployedVersion && a.DeployedRevision == b.DeployedRevision
}

// takeOverChanged passes a status write that makes a layer Kraan's again
// (Kraan's controller still running) or the operator's.
func takeOverChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*kraanv1.AddonsLayer)
		after, ok2 := e.ObjectNew.(*kraanv1.AddonsLayer)
		return ok1 && ok2 && before.AwaitsTakeOver() != after.AwaitsTakeOver()
	}}
}

func (r *Reconciler) layersMatching(ctx context.Context, index, value string) []reconcile.Request {
	list := &kraanv1.AddonsLayerList{}
	if err := r.List(ctx, list, client.MatchingFields{index: value}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing layers for a watch event failed", "index", index, "value", value)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, l := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l)})
	}
	return reqs
}

// placedLayers maps a FleetCluster to every placed layer.
func (r *Reconciler) placedLayers(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &kraanv1.AddonsLayerList{}
	if err := r.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing layers for a FleetCluster event failed")
		return nil
	}
	var reqs []reconcile.Request
	for _, l := range list.Items {
		if l.Spec.Placement != nil || len(l.Status.Clusters) > 0 {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l)})
		}
	}
	return reqs
}

// layerWorkloadKinds are the workload kinds a layer waits for, each
// selected by the layer label.
func layerWorkloadKinds() map[schema.GroupVersionKind]labels.Selector {
	owned := kit.HasLabel(manifest.LayerLabel)
	return map[schema.GroupVersionKind]labels.Selector{
		appsv1.SchemeGroupVersion.WithKind("Deployment"):  owned,
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"): owned,
		appsv1.SchemeGroupVersion.WithKind("DaemonSet"):   owned,
		batchv1.SchemeGroupVersion.WithKind("Job"):        owned,
	}
}

// requestsForOwnedObject maps an object to the layer named by its label.
func requestsForOwnedObject(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[manifest.LayerLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
}

// collectArtifacts removes the artifacts that no layer's source serves any
// more; it runs every artifactGCInterval.
func (r *Reconciler) collectArtifacts(ctx context.Context) {
	if err := r.collectArtifactsOnce(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Artifact garbage collection failed")
	}
}

func (r *Reconciler) collectArtifactsOnce(ctx context.Context) error {
	list := &kraanv1.AddonsLayerList{}
	if err := r.List(ctx, list); err != nil {
		return fmt.Errorf("listing layers: %w", err)
	}
	inUse := map[string]bool{}
	for i := range list.Items {
		obs, err := r.observeSource(ctx, r.Client, &list.Items[i])
		if err != nil {
			return err
		}
		if obs.Artifact != nil {
			inUse[obs.Artifact.Digest] = true
		}
	}
	_, err := r.Store.GC(ctx, func(d string) bool { return inUse[d] })
	return err
}
