package addonslayer

import (
	"fmt"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestSetReadyCondition_EveryCombination sets every combination of the
// layer's owned conditions (absent, True, False) and checks the one Ready
// against the rule stated without the table: Ready is True exactly when the
// layer is Deployed and neither stalled nor reconciling, and otherwise
// carries the reason of the most severe condition; a layer on hold is never
// Ready.
func TestSetReadyCondition_EveryCombination(t *testing.T) {
	statuses := []metav1.ConditionStatus{"", metav1.ConditionTrue, metav1.ConditionFalse}
	for _, held := range []bool{false, true} {
		for _, stalled := range statuses {
			for _, reconciling := range statuses {
				for _, deployed := range statuses {
					checkLayerReady(t, held, stalled, reconciling, deployed)
				}
			}
		}
	}
}

// checkLayerReady sets one combination and checks Ready against the rule.
func checkLayerReady(t *testing.T, held bool, stalled, reconciling, deployed metav1.ConditionStatus) {
	t.Helper()
	types := []string{kraanv1.StalledCondition, kraanv1.ReconcilingCondition, kraanv1.DeployedCondition}
	obj := &kraanv1.AddonsLayer{}
	for i, s := range []metav1.ConditionStatus{stalled, reconciling, deployed} {
		if s != "" {
			obj.Status.Conditions = append(obj.Status.Conditions, metav1.Condition{
				Type: types[i], Status: s, Reason: types[i] + string(s), Message: "m"})
		}
	}
	h := &halt{state: kraanv1.ApplyingState, reason: "HaltReason", message: "halt message"}
	if held {
		h.state, h.reason = kraanv1.HoldState, kraanv1.ReasonOnHold
	}
	setReadyCondition(obj, h)
	ready := apimeta.FindStatusCondition(obj.Status.Conditions, kraanv1.ReadyCondition)

	wantTrue := !held && stalled != metav1.ConditionTrue && reconciling != metav1.ConditionTrue && deployed == metav1.ConditionTrue
	var wantReason string
	switch {
	case held:
		wantReason = kraanv1.ReasonOnHold
	case stalled == metav1.ConditionTrue:
		wantReason = kraanv1.StalledCondition + "True"
	case reconciling == metav1.ConditionTrue:
		wantReason = kraanv1.ReconcilingCondition + "True"
	case deployed == "":
		wantReason = kraanv1.ReasonProgressing
	default:
		wantReason = kraanv1.DeployedCondition + string(deployed)
	}
	name := fmt.Sprintf("held=%v stalled=%q reconciling=%q deployed=%q", held, stalled, reconciling, deployed)
	if (ready.Status == metav1.ConditionTrue) != wantTrue || ready.Reason != wantReason {
		t.Errorf("%s: Ready %s/%s, want true=%v reason %s", name, ready.Status, ready.Reason, wantTrue, wantReason)
	}
	if ready.Status == metav1.ConditionUnknown {
		t.Errorf("%s: a layer's Ready is never Unknown", name)
	}
}
