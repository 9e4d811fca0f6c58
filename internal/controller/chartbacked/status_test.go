package chartbacked

import (
	"fmt"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChartSummary_EveryCombination sets every combination of the Operator
// SDK conditions a chart-backed object owns and checks Ready against the rule
// stated without the table: Ready exactly when deployed with no failure
// outstanding; otherwise the reason of the first problem, Irreconcilable
// before ReleaseFailed before Deployed.
func TestChartSummary_EveryCombination(t *testing.T) {
	types := []string{ChartIrreconcilable, ChartReleaseFailed, ChartDeployed}
	statuses := []metav1.ConditionStatus{"", metav1.ConditionTrue, metav1.ConditionFalse}
	for _, irreconcilable := range statuses {
		for _, failed := range statuses {
			for _, deployed := range statuses {
				var conds []metav1.Condition
				for i, s := range []metav1.ConditionStatus{irreconcilable, failed, deployed} {
					if s != "" {
						conds = append(conds, metav1.Condition{Type: types[i], Status: s, Reason: types[i] + string(s), Message: "m"})
					}
				}
				chartSummary.SetReady(&conds, 4)
				ready := apimeta.FindStatusCondition(conds, ChartReady)
				name := fmt.Sprintf("irreconcilable=%q failed=%q deployed=%q", irreconcilable, failed, deployed)

				wantTrue := irreconcilable != metav1.ConditionTrue && failed != metav1.ConditionTrue && deployed == metav1.ConditionTrue
				var wantReason string
				switch {
				case irreconcilable == metav1.ConditionTrue:
					wantReason = ChartIrreconcilable + "True"
				case failed == metav1.ConditionTrue:
					wantReason = ChartReleaseFailed + "True"
				case deployed == "":
					wantReason = ReasonNotDeployed
				case deployed == metav1.ConditionTrue:
					wantReason = ReasonReleaseSucceeded
				default:
					wantReason = ChartDeployed + "False"
				}
				if (ready.Status == metav1.ConditionTrue) != wantTrue || ready.Reason != wantReason || ready.ObservedGeneration != 4 {
					t.Errorf("%s: Ready %s/%s, want true=%v reason %s", name, ready.Status, ready.Reason, wantTrue, wantReason)
				}
			}
		}
	}
}
