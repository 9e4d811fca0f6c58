package olm

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Reasons of the Upgradeable condition.
const (
	// ReasonLayersInProgress: at least one layer is Applying or Pruning.
	ReasonLayersInProgress = "LayersInProgress"
	// ReasonNoLayerInProgress: no layer is Applying or Pruning.
	ReasonNoLayerInProgress = "NoLayerInProgress"
)

// UpgradeableReconciler keeps the OperatorCondition's Upgradeable condition
// in line with the layers: every AddonsLayer event recomputes it from all layers.
type UpgradeableReconciler struct {
	// Reader lists the layers (the manager's cache).
	Reader client.Reader
	// Condition is the Upgradeable condition to write.
	Condition conditions.Condition

	mu   sync.Mutex
	last *metav1.Condition // last written, to skip identical writes
}

// SetupUpgradeable registers an UpgradeableReconciler writing the Upgradeable
// condition of the operator's OperatorCondition. Call it only when
// RunningUnderOLM; fallbackNamespace is the operator's namespace when it does
// not run in a pod.
func SetupUpgradeable(mgr ctrl.Manager, fallbackNamespace string) error {
	if err := apiv2.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("registering OperatorCondition: %w", err)
	}
	key, err := ConditionKey(fallbackNamespace)
	if err != nil {
		return err
	}
	r := &UpgradeableReconciler{
		Reader:    mgr.GetClient(),
		Condition: NewCondition(mgr.GetAPIReader(), mgr.GetClient(), key, apiv2.ConditionType(apiv2.Upgradeable)),
	}
	return r.SetupWithManager(mgr)
}

// upgradeableKey is the single work item: every event recomputes the whole.
var upgradeableKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "upgradeable"}}

// SetupWithManager watches AddonsLayers, plus one start-up event so the
// condition is written even when there is no layer.
func (r *UpgradeableReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toKey := func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{upgradeableKey} }
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &kraanv1.AddonsLayer{}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("olm-upgradeable").
		Watches(&kraanv1.AddonsLayer{}, handler.EnqueueRequestsFromMapFunc(toKey)).
		WatchesRawSource(source.Channel(start, handler.EnqueueRequestsFromMapFunc(toKey))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// Reconcile sets Upgradeable from the states of all layers.
func (r *UpgradeableReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	layers := &kraanv1.AddonsLayerList{}
	if err := r.Reader.List(ctx, layers); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing layers: %w", err)
	}
	want := Upgradeable(layers.Items)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && r.last.Status == want.Status && r.last.Reason == want.Reason && r.last.Message == want.Message {
		return ctrl.Result{}, nil
	}
	err := r.Condition.Set(ctx, want.Status, conditions.WithReason(want.Reason), conditions.WithMessage(want.Message))
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("setting the OperatorCondition Upgradeable=%s: %w", want.Status, err)
	}
	ctrl.LoggerFrom(ctx).Info("Set the OperatorCondition", "type", apiv2.Upgradeable, "status", want.Status, "reason", want.Reason)
	r.last = &want
	return ctrl.Result{}, nil
}

// Upgradeable is the condition the layers call for: False while any layer is
// Applying or Pruning (naming them), True otherwise.
func Upgradeable(layers []kraanv1.AddonsLayer) metav1.Condition {
	var busy []string
	for i := range layers {
		switch state := layers[i].Status.State; state {
		case kraanv1.ApplyingState, kraanv1.PruningState:
			busy = append(busy, fmt.Sprintf("%s (%s)", layers[i].Name, state))
		}
	}
	if len(busy) == 0 {
		return metav1.Condition{
			Type: apiv2.Upgradeable, Status: metav1.ConditionTrue,
			Reason: ReasonNoLayerInProgress, Message: "No layer is being applied or pruned",
		}
	}
	sort.Strings(busy)
	return metav1.Condition{
		Type: apiv2.Upgradeable, Status: metav1.ConditionFalse,
		Reason:  ReasonLayersInProgress,
		Message: "Layers are being applied or pruned: " + strings.Join(busy, ", "),
	}
}
