package apply

import (
	"context"
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Health is the readiness of one applied object.
type Health struct {
	// Ready is true when the object is healthy.
	Ready bool
	// Reason is a short CamelCase word: the HelmRelease Ready reason, or the
	// kstatus status (InProgress, Failed, NotFound).
	Reason string
	// Message says what the object waits for, when known.
	Message string
}

// HealthOf reads obj fresh and judges it: kraan.io HelmReleases are ready when
// their Ready condition is True for their current generation (a Ready written
// before the last spec change does not count: Kraan's premature Deployed);
// everything else by kstatus.
func (a *Applier) HealthOf(ctx context.Context, obj *unstructured.Unstructured) (Health, error) {
	live, err := a.get(ctx, obj)
	if err != nil {
		return Health{}, err
	}
	if live == nil {
		return Health{Reason: "NotFound", Message: "it does not exist"}, nil
	}
	if isHelmRelease(live) {
		return helmReleaseHealth(live), nil
	}
	res, err := kstatus.Compute(live)
	if err != nil {
		return Health{}, fmt.Errorf("computing the status of %s: %w", Describe(obj), err)
	}
	return Health{Ready: res.Status == kstatus.CurrentStatus, Reason: res.Status.String(), Message: res.Message}, nil
}

func isHelmRelease(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == kraanv1.GroupVersion.Group && gvk.Kind == "HelmRelease"
}

// helmReleaseHealth applies the kstatus rule for kinds with a Ready condition.
func helmReleaseHealth(u *unstructured.Unstructured) Health {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if observed != u.GetGeneration() {
		return Health{Reason: kraanv1.ReasonProgressing, Message: fmt.Sprintf(
			"generation %d not yet handled (observed %d)", u.GetGeneration(), observed)}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != kraanv1.ReadyCondition {
			continue
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return Health{Ready: m["status"] == "True", Reason: reason, Message: msg}
	}
	return Health{Reason: kraanv1.ReasonProgressing, Message: "no Ready condition yet"}
}
