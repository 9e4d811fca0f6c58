package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// AddonsLayerReconciler reconciles AddonsLayer objects. Its steps arrive with
// the Layers issue (#4); until then it only reads the object.
type AddonsLayerReconciler struct {
	client.Client
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

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *AddonsLayerReconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&kraanv1.AddonsLayer{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}
