package olm

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Reasons of the Upgradeable condition.
const (
	// ReasonLayersInProgress: at least one layer is Applying or Pruning.
	ReasonLayersInProgress = "LayersInProgress"
	// ReasonHelmActionsInProgress: no layer is Applying or Pruning, but a
	// Helm install, upgrade or rollback runs.
	ReasonHelmActionsInProgress = "HelmActionsInProgress"
	// ReasonNoLayerInProgress: no layer is Applying or Pruning and no Helm
	// action runs.
	ReasonNoLayerInProgress = "NoLayerInProgress"
)

// UpgradeableReconciler keeps the OperatorCondition's Upgradeable condition
// in line with the layers and the Helm actions in flight: every AddonsLayer
// event and every change of a Helm release record recomputes it from all of
// them.
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

// SetupWithManager watches AddonsLayers and Helm's release records (Secrets,
// metadata only, as the HelmRelease controller caches them), plus one
// start-up event so the condition is written even when there is no layer.
func (r *UpgradeableReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toKey := func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{upgradeableKey} }
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &kraanv1.AddonsLayer{}}
	records := &metav1.PartialObjectMetadata{}
	records.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	isRecord := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[helmOwnerLabel] == helmOwner })
	return ctrl.NewControllerManagedBy(mgr).
		Named("olm-upgradeable").
		Watches(&kraanv1.AddonsLayer{}, handler.EnqueueRequestsFromMapFunc(toKey)).
		Watches(records, handler.EnqueueRequestsFromMapFunc(toKey), builder.OnlyMetadata, builder.WithPredicates(isRecord)).
		WatchesRawSource(source.Channel(start, handler.EnqueueRequestsFromMapFunc(toKey))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// Reconcile sets Upgradeable from the states of all layers and the Helm
// actions in flight; while one runs, it looks again when its record would
// turn stale.
func (r *UpgradeableReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	layers := &kraanv1.AddonsLayerList{}
	if err := r.Reader.List(ctx, layers); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing layers: %w", err)
	}
	records, err := listHelmRecords(ctx, r.Reader)
	if err != nil {
		return ctrl.Result{}, err
	}
	actions, staleIn := helmActionsInFlight(records, time.Now())
	result := ctrl.Result{RequeueAfter: staleIn}
	want := Upgradeable(layers.Items, actions)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && r.last.Status == want.Status && r.last.Reason == want.Reason && r.last.Message == want.Message {
		return result, nil
	}
	err = r.Condition.Set(ctx, want.Status, conditions.WithReason(want.Reason), conditions.WithMessage(want.Message))
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("setting the OperatorCondition Upgradeable=%s: %w", want.Status, err)
	}
	ctrl.LoggerFrom(ctx).Info("Set the OperatorCondition", "type", apiv2.Upgradeable, "status", want.Status, "reason", want.Reason)
	r.last = &want
	return result, nil
}

// Upgradeable is the condition the layers and the Helm actions in flight
// (helmActionsInFlight) call for: False while any layer is Applying or
// Pruning or any action runs (naming them), True otherwise.
func Upgradeable(layers []kraanv1.AddonsLayer, helmActions []string) metav1.Condition {
	var busy []string
	for i := range layers {
		switch state := layers[i].Status.State; state {
		case kraanv1.ApplyingState, kraanv1.PruningState:
			busy = append(busy, fmt.Sprintf("%s (%s)", layers[i].Name, state))
		}
	}
	sort.Strings(busy)
	var parts []string
	if len(busy) > 0 {
		parts = append(parts, "Layers are being applied or pruned: "+strings.Join(busy, ", "))
	}
	if len(helmActions) > 0 {
		parts = append(parts, "Helm actions are running: "+strings.Join(helmActions, ", "))
	}
	cond := metav1.Condition{Type: apiv2.Upgradeable, Status: metav1.ConditionFalse, Message: strings.Join(parts, "; ")}
	switch {
	case len(busy) > 0:
		cond.Reason = ReasonLayersInProgress
	case len(helmActions) > 0:
		cond.Reason = ReasonHelmActionsInProgress
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonNoLayerInProgress
		cond.Message = "No layer is being applied or pruned and no Helm action is running"
	}
	return cond
}
