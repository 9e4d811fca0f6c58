package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
)

// HabitatReconciler reconciles Habitat objects. Its steps arrive with
// the Habitat issue (#5); until then it only reads the object.
type HabitatReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=habitat.kraan.io,resources=habitats,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=habitat.kraan.io,resources=habitats/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=habitat.kraan.io,resources=habitats/finalizers,verbs=update

// Reconcile brings one Habitat towards its desired state.
func (r *HabitatReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &habitatv1.Habitat{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Observed Habitat", "generation", obj.Generation)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *HabitatReconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&habitatv1.Habitat{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}
