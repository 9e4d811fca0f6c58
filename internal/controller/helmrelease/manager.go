package helmrelease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// Field indexes on HelmReleases, used by the mappers to find the releases an
// object change concerns without listing them all.
const (
	// dependsOnIndex holds "<namespace>/<name>" of each dependency.
	dependsOnIndex = ".spec.dependsOn"
	// valuesFromIndex holds "<Kind>/<name>" of each valuesFrom object (same namespace).
	valuesFromIndex = ".spec.valuesFrom"
)

// Setup builds the HelmRelease reconciler on engine and registers it with
// mgr, with its indexes, watches and the watcher of stalled chart sources.
func Setup(mgr ctrl.Manager, engine *helm.Engine, opts Options) error {
	metrics, err := NewMetrics(nil)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	r := &Reconciler{
		Client:                mgr.GetClient(),
		APIReader:             mgr.GetAPIReader(),
		Engine:                engine,
		Charts:                opts.Charts,
		Events:                kit.Events{Recorder: mgr.GetEventRecorder("kraan-operator")},
		DefaultServiceAccount: opts.DefaultServiceAccount,
		Metrics:               metrics,
	}
	if r.Charts == nil {
		charts, err := newSourceCharts(mgr, opts.ChartArtifactsDir)
		if err != nil {
			return err
		}
		r.Charts = charts
		r.staleCharts = newStaleCharts(charts)
		if err := mgr.Add(kit.Every(staleChartsTick, r.staleCharts.checkDue)); err != nil {
			return fmt.Errorf("adding the watcher of stalled chart sources: %w", err)
		}
	}
	return r.setupWithManager(mgr, opts.ControllerOptions)
}

// newSourceCharts gets charts from Flux sources, keeping artifacts in dir.
func newSourceCharts(mgr ctrl.Manager, dir string) (*SourceCharts, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kraan-operator", "chart-artifacts")
	}
	store, err := source.New(dir, source.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the chart artifact store: %w", err)
	}
	return &SourceCharts{Reader: mgr.GetAPIReader(), Fetcher: chart.NewFetcher(chart.Options{}), Artifacts: store}, nil
}

// setupWithManager registers the reconciler, its indexes and watches.
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, opts kit.ControllerOptions) error {
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &kraanv1.HelmRelease{}, dependsOnIndex, dependsOnKeys); err != nil {
		return fmt.Errorf("indexing dependsOn: %w", err)
	}
	if err := indexer.IndexField(ctx, &kraanv1.HelmRelease{}, valuesFromIndex, valuesFromKeys); err != nil {
		return fmt.Errorf("indexing valuesFrom: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&kraanv1.HelmRelease{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Dependents start as soon as a dependency turns Ready, not after a requeue delay.
		Watches(&kraanv1.HelmRelease{}, handler.EnqueueRequestsFromMapFunc(r.requestsForDependency)).
		// Only metadata of ConfigMaps and Secrets is cached: a change of their
		// resourceVersion is all a values change needs to be noticed.
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.requestsForValuesFrom("ConfigMap")),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.requestsForValuesFrom("Secret")),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(opts.Controller())
	if r.staleCharts != nil {
		// Releases stalled on a chart source come back when its index changes.
		b = b.WatchesRawSource(crsource.Channel(r.staleCharts.channel(), &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
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
