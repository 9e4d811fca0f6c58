// Package fleetcluster reconciles FleetClusters: it says whether the
// cluster answers, with its version. Only the FleetClusters of the
// platform's namespaces are read at all (fleet.Registry's cache).
package fleetcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/fleet"
	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// Timings of the check.
const (
	// checkInterval is how often a reachable cluster is checked again.
	checkInterval = 5 * time.Minute
	// retryInterval is how soon a cluster that did not answer is.
	retryInterval = 30 * time.Second
	// checkTimeout bounds one check.
	checkTimeout = 20 * time.Second
)

// Reconciler reconciles FleetCluster objects.
type Reconciler struct {
	client.Client
	Registry *fleet.Registry
	Options  kit.ControllerOptions
}

// +kubebuilder:rbac:groups=kraan.io,resources=fleetclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=kraan.io,resources=fleetclusters/status,verbs=get;update;patch

// Setup registers the reconciler with mgr; without platform namespaces
// there is nothing to reconcile.
func Setup(mgr ctrl.Manager, registry *fleet.Registry, opts kit.ControllerOptions) error {
	if registry.Cache == nil {
		return nil
	}
	r := &Reconciler{Client: mgr.GetClient(), Registry: registry, Options: opts}
	return ctrl.NewControllerManagedBy(mgr).Named("fleetcluster").
		WatchesRawSource(source.Kind(registry.Cache, &kraanv1.FleetCluster{}, &handler.TypedEnqueueRequestForObject[*kraanv1.FleetCluster]{})).
		WithOptions(opts.Controller()).Complete(r)
}

// clusterScope is one pass over a FleetCluster.
type clusterScope struct {
	obj     *kraanv1.FleetCluster
	patcher *kit.Patcher
	version string
}

// Reconcile checks one FleetCluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kit.Reconcile[*clusterScope](ctx, r, req)
}

// Read gets the FleetCluster from the registry's cache.
func (r *Reconciler) Read(ctx context.Context, req ctrl.Request) (*clusterScope, bool, error) {
	obj := &kraanv1.FleetCluster{}
	if err := r.Registry.Reader.Get(ctx, req.NamespacedName, obj); err != nil {
		return nil, false, err
	}
	return &clusterScope{obj: obj, patcher: kit.NewPatcher(r.Client, obj)}, true, nil
}

// Steps: the cluster answers.
func (r *Reconciler) Steps(*clusterScope) []kit.Step[*clusterScope] {
	return []kit.Step[*clusterScope]{r.reconcileConnection}
}

// reconcileConnection reads the kubeconfig and asks the cluster its version.
func (r *Reconciler) reconcileConnection(ctx context.Context, sc *clusterScope) (ctrl.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	conn, err := r.Registry.Connect(ctx, fleet.FromFleetCluster(sc.obj))
	if err != nil {
		if errors.Is(err, fleet.ErrNoKubeConfig) {
			return ctrl.Result{}, outcome.Waiting(kraanv1.ReasonKubeConfigError, retryInterval, err)
		}
		return ctrl.Result{}, outcome.Waiting(kraanv1.ReasonClusterUnreachable, retryInterval, err)
	}
	v, err := conn.Discovery.ServerVersion()
	if err != nil {
		return ctrl.Result{}, outcome.Waiting(kraanv1.ReasonClusterUnreachable, retryInterval, fmt.Errorf("the cluster did not answer: %w", err))
	}
	sc.version = v.GitVersion
	return ctrl.Result{}, nil
}

// Finish writes Ready and the version once.
func (r *Reconciler) Finish(ctx context.Context, sc *clusterScope, _ ctrl.Result, err error) (ctrl.Result, error) {
	obj := sc.obj
	obj.Status.ObservedGeneration = obj.Generation
	status, reason, message := metav1.ConditionTrue, kraanv1.ReasonClusterReachable, "the cluster answers, Kubernetes "+sc.version
	if err != nil {
		status, reason, message = metav1.ConditionFalse, outcome.ReasonOf(err, kraanv1.ReasonReconcileError), err.Error()
	} else {
		obj.Status.KubernetesVersion = sc.version
	}
	kit.SetCondition(&obj.Status.Conditions, obj.Generation, kraanv1.ReadyCondition, status, reason, message)
	patchErr := sc.patcher.Patch(ctx, obj)
	if err == nil {
		return ctrl.Result{RequeueAfter: checkInterval}, patchErr
	}
	res, err := kit.ResultOf(err)
	return res, errors.Join(err, patchErr)
}
