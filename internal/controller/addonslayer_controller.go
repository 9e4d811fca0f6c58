package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// LayerOptions are the AddonsLayer controller's settings.
type LayerOptions struct{}

// AddonsLayerReconciler reconciles AddonsLayer objects. Its steps arrive with
// the Layers issue (#4); until then it only reads the object.
type AddonsLayerReconciler struct {
	client.Client
}

// setupAddonsLayer builds the reconciler from mgr and opts and registers it.
func setupAddonsLayer(mgr ctrl.Manager, opts Options) error {
	r := &AddonsLayerReconciler{Client: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		For(&kraanv1.AddonsLayer{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kraan.io,resources=addonslayers/finalizers,verbs=update

// Reconcile brings one AddonsLayer towards its desired state.
func (r *AddonsLayerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &kraanv1.AddonsLayer{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Observed AddonsLayer", "generation", obj.Generation)
	return ctrl.Result{}, nil
}
