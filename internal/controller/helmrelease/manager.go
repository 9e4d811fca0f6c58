package helmrelease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// Field indexes on HelmReleases, used by the mappers to find the releases an
// object change concerns without listing them all.
const (
	// dependsOnIndex holds "<namespace>/<name>" of each dependency.
	dependsOnIndex = ".spec.dependsOn"
	// valuesFromIndex holds "<Kind>/<name>" of each valuesFrom object and of
	// the kubeConfig Secret (same namespace).
	valuesFromIndex = ".spec.valuesFrom"
	// chartSourceIndex holds "<Kind>/<namespace>/<name>" of the chart's source
	// (chart.spec.sourceRef or chartRef).
	chartSourceIndex = ".spec.chartSource"
	// helmRecordIndex holds, on the cached metadata of Helm's release
	// records (Secrets labelled owner=helm), the release's name.
	helmRecordIndex = ".metadata.labels.helmRelease"
)

// Setup builds the HelmRelease reconciler on engine and registers it with
// mgr, with its indexes, watches and the watcher of stalled chart sources.
func Setup(mgr ctrl.Manager, engine *helm.Engine, opts Options) error {
	metrics, err := NewMetrics(nil)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	r := &Reconciler{
		Client:               mgr.GetClient(),
		APIReader:            mgr.GetAPIReader(),
		Engine:               engine,
		Charts:               opts.Charts,
		Events:               kit.Events{Recorder: mgr.GetEventRecorder("kraan-operator")},
		Tenancy:              opts.Tenancy,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
		HelmDefaults:         opts.HelmDefaults,
		DependencyRequeue:    opts.dependencyRequeue(),
		Metrics:              metrics,
		runs:                 newRuns(opts, metrics),
	}
	r.floor = opts.IntervalFloor()
	if err := mgr.Add(r.runs.Lifecycle()); err != nil {
		return fmt.Errorf("adding the Helm runs' shutdown: %w", err)
	}
	if r.Charts == nil {
		charts, err := newSourceCharts(mgr, opts.ChartArtifactsDir, opts.ArtifactLimits, opts.ChartFetch)
		if err != nil {
			return err
		}
		r.Charts = charts
		r.repoWatch = newRepositoryWatch(charts)
		r.repoWatch.minInterval = opts.MinReconcileInterval
		if err := mgr.Add(kit.Every(repoWatchTick, r.repoWatch.checkDue)); err != nil {
			return fmt.Errorf("adding the watcher of HelmRepository indexes: %w", err)
		}
	}
	return r.setupWithManager(mgr, opts)
}

// newSourceCharts gets charts from Flux sources, keeping artifacts in dir
// under limits, with fetch's caps on what repositories may send.
func newSourceCharts(mgr ctrl.Manager, dir string, limits source.Options, fetch chart.Options) (*releasespec.SourceCharts, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kraan-operator", "chart-artifacts")
	}
	store, err := source.New(dir, limits)
	if err != nil {
		return nil, fmt.Errorf("opening the chart artifact store: %w", err)
	}
	return &releasespec.SourceCharts{Reader: mgr.GetAPIReader(), Sources: mgr.GetClient(), Fetcher: chart.NewFetcher(fetch), Artifacts: store}, nil
}

// setupWithManager registers the reconciler, its indexes and watches.
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, opts Options) error {
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &kraanv1.HelmRelease{}, dependsOnIndex, dependsOnKeys); err != nil {
		return fmt.Errorf("indexing dependsOn: %w", err)
	}
	if err := indexer.IndexField(ctx, &kraanv1.HelmRelease{}, valuesFromIndex, valuesFromKeys); err != nil {
		return fmt.Errorf("indexing valuesFrom: %w", err)
	}
	if err := indexer.IndexField(ctx, &kraanv1.HelmRelease{}, chartSourceIndex, chartSourceKeys); err != nil {
		return fmt.Errorf("indexing chart sources: %w", err)
	}
	if err := indexHelmRecords(ctx, indexer); err != nil {
		return err
	}
	watchConfigs := opts.watchConfigs()
	configMapKind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	configs, err := kit.NewSelectedMetadataCache(mgr, "watched valuesFrom ConfigMaps", opts.WatchNamespaces,
		map[schema.GroupVersionKind]labels.Selector{configMapKind: watchConfigs})
	if err != nil {
		return err
	}
	configMapRequests := r.requestsForValuesFrom("ConfigMap")
	b := ctrl.NewControllerManagedBy(mgr).
		For(&kraanv1.HelmRelease{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Dependents start as soon as a dependency turns Ready, not after a requeue delay.
		Watches(&kraanv1.HelmRelease{}, handler.EnqueueRequestsFromMapFunc(r.requestsForDependency)).
		// Only metadata of ConfigMaps and Secrets is cached: a change of their
		// resourceVersion is all a values change needs to be noticed. Only
		// the ConfigMaps the selector picks are cached at all (a cache of
		// their own); every Secret's metadata is, for Helm's records.
		WatchesRawSource(crsource.Kind(configs, kit.MetadataOf(configMapKind),
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, cm *metav1.PartialObjectMetadata) []reconcile.Request {
				return configMapRequests(ctx, cm)
			}),
			predicate.TypedResourceVersionChangedPredicate[*metav1.PartialObjectMetadata]{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.requestsForValuesFrom("Secret")),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}, selected(watchConfigs))).
		// The end of a Helm run re-queues its release, which records it,
		// and so does a turn in the rollout queue: both ahead of the rest.
		WatchesRawSource(crsource.Channel(r.runs.Ended(), enqueueAhead)).
		WithOptions(opts.Controller())
	// A new artifact of a chart's source reconciles the releases built from
	// it at once, not at their interval. Flux's kinds are watched once the
	// cluster has their CRDs (kit.WatchWhenInstalled).
	var fluxWatches []kit.OptionalWatch
	for kind, src := range map[string]releasespec.ArtifactSource{
		sourcev1.GitRepositoryKind: &sourcev1.GitRepository{}, sourcev1.OCIRepositoryKind: &sourcev1.OCIRepository{},
		sourcev1.BucketKind: &sourcev1.Bucket{}, sourcev1.HelmChartKind: &sourcev1.HelmChart{},
		kraanv1.ExternalArtifactKind: &sourcev1.ExternalArtifact{},
	} {
		fluxWatches = append(fluxWatches, kit.OptionalWatch{Object: src,
			Handler: handler.EnqueueRequestsFromMapFunc(r.requestsForChartSource(kind)), Predicates: []predicate.Predicate{artifactChanged{}}})
	}
	if r.repoWatch != nil {
		// A HelmRepository is checked at once when its spec changes or
		// source-controller publishes a new index of it; repoWatch then
		// re-queues the releases the change concerns.
		fluxWatches = append(fluxWatches, kit.OptionalWatch{Object: &sourcev1.HelmRepository{}, Handler: handler.Funcs{
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.repoWatch.Due(ctx, client.ObjectKeyFromObject(e.ObjectNew))
			},
		}, Predicates: []predicate.Predicate{predicate.Or(predicate.GenerationChangedPredicate{}, artifactChanged{})}})
		b = b.WatchesRawSource(crsource.Channel(r.repoWatch.channel(), &handler.EnqueueRequestForObject{}))
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	return kit.WatchWhenInstalled(mgr, c, fluxWatches)
}

// runPriority is the priority, in the controller's priority queue, of the
// reconciles the runs ask for: a run ended (its outcome is to be recorded,
// its rollout slot freed) or a release's turn in the rollout queue came.
// New and changed releases have the default, 0. A wave of 10,000 releases
// applied at once puts 10,000 first reconciles in the queue, each writing
// its place in the rollout queue (~6,000 were still queued 90 s into the
// bench's wave); at the same priority every turn and every end — which
// gives its slot back — waited behind all of them. These reconciles are
// bounded by the rollouts in flight, so they cannot starve the others.
const runPriority = 10

// enqueueAhead enqueues the release of a runs event at runPriority (in
// order of arrival without a priority queue).
var enqueueAhead = handler.Funcs{
	GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(runPriority)}, req)
			return
		}
		q.Add(req)
	},
}

// artifactChanged passes updates of a Flux source whose artifact changed
// (revision or digest): status updates that only touch conditions do not
// concern the releases built from it.
type artifactChanged struct {
	predicate.Funcs
}

func (artifactChanged) Update(e event.UpdateEvent) bool {
	oldSrc, okOld := e.ObjectOld.(releasespec.ArtifactSource)
	newSrc, okNew := e.ObjectNew.(releasespec.ArtifactSource)
	if !okOld || !okNew {
		return false
	}
	a, b := oldSrc.GetArtifact(), newSrc.GetArtifact()
	switch {
	case b == nil:
		return false
	case a == nil:
		return true
	}
	return a.Revision != b.Revision || a.Digest != b.Digest
}

func (artifactChanged) Create(event.CreateEvent) bool   { return false }
func (artifactChanged) Delete(event.DeleteEvent) bool   { return false }
func (artifactChanged) Generic(event.GenericEvent) bool { return false }

// chartSourceKeys indexes a release by its chart's source.
func chartSourceKeys(obj client.Object) []string {
	hr := obj.(*kraanv1.HelmRelease)
	if ref := hr.Spec.ChartRef; ref != nil {
		return []string{chartSourceKey(ref.Kind, releasespec.Namespaced(ref.Namespace, hr.Namespace, ref.Name))}
	}
	if hr.Spec.Chart == nil || hr.Spec.Chart.Spec.SourceRef == nil {
		return nil // an OCI chart at spec.chart.spec.url has no source object
	}
	ref := hr.Spec.Chart.Spec.SourceRef
	return []string{chartSourceKey(ref.Kind, releasespec.Namespaced(ref.Namespace, hr.Namespace, ref.Name))}
}

func chartSourceKey(kind string, key client.ObjectKey) string {
	return kind + "/" + key.String()
}

// requestsForChartSource maps a source of kind to the releases whose chart
// it holds.
func (r *Reconciler) requestsForChartSource(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return r.listRequests(ctx, client.MatchingFields{chartSourceIndex: chartSourceKey(kind, client.ObjectKeyFromObject(obj))})
	}
}

func dependsOnKeys(obj client.Object) []string {
	hr := obj.(*kraanv1.HelmRelease)
	keys := make([]string, 0, len(hr.Spec.DependsOn))
	for _, d := range hr.Spec.DependsOn {
		ns := d.Namespace
		if ns == "" {
			ns = hr.Namespace
		}
		keys = append(keys, ns+"/"+d.Name)
	}
	return keys
}

func valuesFromKeys(obj client.Object) []string {
	hr := obj.(*kraanv1.HelmRelease)
	keys := make([]string, 0, len(hr.Spec.ValuesFrom))
	for _, v := range hr.Spec.ValuesFrom {
		keys = append(keys, v.Kind+"/"+v.Name)
	}
	// The kubeConfig Secret re-queues the release the same way.
	if kc := hr.Spec.KubeConfig; kc != nil && kc.SecretRef != nil {
		keys = append(keys, "Secret/"+kc.SecretRef.Name)
	}
	return keys
}

// requestsForDependency maps a HelmRelease to the releases that depend on it,
// when it is Ready at its current generation.
func (r *Reconciler) requestsForDependency(ctx context.Context, obj client.Object) []reconcile.Request {
	hr := obj.(*kraanv1.HelmRelease)
	if hr.Status.ObservedGeneration != hr.Generation || !isReady(hr) {
		return nil
	}
	return r.listRequests(ctx, client.MatchingFields{dependsOnIndex: hr.Namespace + "/" + hr.Name})
}

func (r *Reconciler) requestsForValuesFrom(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return r.listRequests(ctx, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{valuesFromIndex: kind + "/" + obj.GetName()})
	}
}

func (r *Reconciler) listRequests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &kraanv1.HelmReleaseList{}
	if err := r.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HelmReleases for a watch event")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, hr := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&hr)})
	}
	return reqs
}

// indexHelmRecords indexes the cached metadata of Helm's release records by
// release name (helmRecordKeys), which cachedRecords reads.
func indexHelmRecords(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, secretMetadata(), helmRecordIndex, helmRecordKeys); err != nil {
		return fmt.Errorf("indexing Helm release records: %w", err)
	}
	return nil
}

// selected passes the events of objects whose labels sel matches.
func selected(sel labels.Selector) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return sel.Matches(labels.Set(o.GetLabels())) })
}

// secretMetadata is the type of the operator's cache of Secret metadata.
func secretMetadata() *metav1.PartialObjectMetadata {
	return kit.MetadataOf(corev1.SchemeGroupVersion.WithKind("Secret"))
}

// helmRecordKeys indexes a Helm release record by its release's name: the
// in-sync check of each reconcile finds the release's records in the index
// instead of matching the labels of every Secret of the namespace (all of
// them Helm records of other releases, in a namespace holding thousands).
func helmRecordKeys(obj client.Object) []string {
	labels := obj.GetLabels()
	if labels["owner"] != "helm" || labels["name"] == "" {
		return nil
	}
	return []string{labels["name"]}
}
