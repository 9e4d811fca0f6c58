package apply

import (
	"context"
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// NotFound is the Health reason of an object that does not exist.
const NotFound = "NotFound"

// Health is the readiness of one applied object.
type Health struct {
	// Ready is true when the object is healthy.
	Ready bool
	// Reason is a short CamelCase word: the HelmRelease Ready reason, or the
	// kstatus status (InProgress, Failed, NotFound).
	Reason string
	// Message says what the object waits for, when known.
	Message string
	// Failed is true when the object has failed and will not get ready by
	// itself: kstatus Failed (a failed Job or Pod), or a HelmRelease Stalled at
	// its current generation.
	Failed bool
}

// HealthOf reads obj fresh and judges it: kraan.io HelmReleases and the other
// kinds the operator reconciles (see NewApplier) are ready when their Ready
// condition is True for their current generation (a Ready written before the
// last spec change does not count: Kraan's premature Deployed); everything
// else by kstatus.
func (a *Applier) HealthOf(ctx context.Context, obj *unstructured.Unstructured) (Health, error) {
	live, err := a.get(ctx, obj)
	if err != nil {
		return Health{}, err
	}
	if live == nil {
		return Health{Reason: NotFound, Message: "it does not exist"}, nil
	}
	if a.readyKinds[live.GroupVersionKind().GroupKind()] {
		return readyConditionHealth(live), nil
	}
	res, err := kstatus.Compute(live)
	if err != nil {
		return Health{}, fmt.Errorf("computing the status of %s: %w", Describe(obj), err)
	}
	return Health{Ready: res.Status == kstatus.CurrentStatus, Failed: res.Status == kstatus.FailedStatus,
		Reason: res.Status.String(), Message: res.Message}, nil
}

// HealthOfAll is HealthOf for each of objs, read concurrently; the result
// is in the order of objs.
func (a *Applier) HealthOfAll(ctx context.Context, objs []*unstructured.Unstructured) ([]Health, error) {
	health := make([]Health, len(objs))
	err := forEach(ctx, objs, func(ctx context.Context, i int) (err error) {
		health[i], err = a.HealthOf(ctx, objs[i])
		return err
	})
	return health, err
}

// readyConditionHealth applies the kstatus rule for kinds with a Ready
// condition, without kstatus's benefit of the doubt for an object that has no
// status yet.
func readyConditionHealth(u *unstructured.Unstructured) Health {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if observed != u.GetGeneration() {
		return Health{Reason: kraanv1.ReasonProgressing, Message: fmt.Sprintf(
			"generation %d not yet handled (observed %d)", u.GetGeneration(), observed)}
	}
	ready, found := conditionOf(u, kraanv1.ReadyCondition)
	if !found {
		return Health{Reason: kraanv1.ReasonProgressing, Message: "no Ready condition yet"}
	}
	stalled, _ := conditionOf(u, kraanv1.StalledCondition)
	reason, _ := ready["reason"].(string)
	msg, _ := ready["message"].(string)
	return Health{Ready: isTrue(ready), Failed: isTrue(stalled), Reason: reason, Message: msg}
}

// isTrue reports whether a condition read by conditionOf has status True.
func isTrue(condition map[string]any) bool {
	return condition["status"] == string(metav1.ConditionTrue)
}

// conditionOf returns the status condition of type condType, if there is one.
func conditionOf(u *unstructured.Unstructured, condType string) (map[string]any, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m, true
		}
	}
	return nil, false
}
