package chartbacked

import (
	"fmt"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChartSummary_EveryCombination sets every combination of the conditions
// a chart-backed object owns (Operator SDK's, plus SecretsReady from a Go
// half) and checks Ready against the rule stated without the table: Ready
// exactly when deployed with no failure outstanding; otherwise the reason of
// the first problem, Irreconcilable, then SecretsReady, then ReleaseFailed,
// then Deployed.
func TestChartSummary_EveryCombination(t *testing.T) {
	statuses := []metav1.ConditionStatus{"", metav1.ConditionTrue, metav1.ConditionFalse}
	for _, irreconcilable := range statuses {
		for _, secrets := range statuses {
			for _, failed := range statuses {
				for _, deployed := range statuses {
					checkChartReady(t, irreconcilable, secrets, failed, deployed)
				}
			}
		}
	}
}

func checkChartReady(t *testing.T, irreconcilable, secrets, failed, deployed metav1.ConditionStatus) {
	t.Helper()
	types := []string{ChartIrreconcilable, SecretsReady, ChartReleaseFailed, ChartDeployed}
	var conds []metav1.Condition
	for i, s := range []metav1.ConditionStatus{irreconcilable, secrets, failed, deployed} {
		if s != "" {
			conds = append(conds, metav1.Condition{Type: types[i], Status: s, Reason: types[i] + string(s), Message: "m"})
		}
	}
	SetReady(&conds, 4)
	ready := apimeta.FindStatusCondition(conds, ChartReady)

	wantTrue := irreconcilable != metav1.ConditionTrue && secrets != metav1.ConditionFalse &&
		failed != metav1.ConditionTrue && deployed == metav1.ConditionTrue
	var wantReason string
	switch {
	case irreconcilable == metav1.ConditionTrue:
		wantReason = ChartIrreconcilable + "True"
	case secrets == metav1.ConditionFalse:
		wantReason = SecretsReady + "False"
	case failed == metav1.ConditionTrue:
		wantReason = ChartReleaseFailed + "True"
	case deployed == "":
		wantReason = ReasonNotDeployed
	case deployed == metav1.ConditionTrue:
		wantReason = ReasonReleaseSucceeded
	default:
		wantReason = ChartDeployed + "False"
	}
	name := fmt.Sprintf("irreconcilable=%q secrets=%q failed=%q deployed=%q", irreconcilable, secrets, failed, deployed)
	if (ready.Status == metav1.ConditionTrue) != wantTrue || ready.Reason != wantReason || ready.ObservedGeneration != 4 {
		t.Errorf("%s: Ready %s/%s, want true=%v reason %s", name, ready.Status, ready.Reason, wantTrue, wantReason)
	}
}
