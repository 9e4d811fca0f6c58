package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// HelmReleaseReconciler reconciles HelmRelease objects. Its steps arrive with
// the HelmRelease issue (#3); until then it only reads the object.
type HelmReleaseReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases/finalizers,verbs=update

// Reconcile brings one HelmRelease towards its desired state.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &kraanv1.HelmRelease{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Observed HelmRelease", "generation", obj.Generation)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *HelmReleaseReconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&kraanv1.HelmRelease{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}
