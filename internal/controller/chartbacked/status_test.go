package chartbacked

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// TestChartSummary_EveryCombination sets every combination of the conditions
// a chart-backed object owns (Operator SDK's, plus an extra one registered
// for a Go half, as Habitat's SecretsReady) and checks Ready against the rule
// stated without the table: Ready exactly when deployed with no failure
// outstanding; otherwise the reason of the first problem, Irreconcilable,
// then the extra condition, then ReleaseFailed, then Deployed.
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
	const extra = "SecretsReady"
	types := []string{kraanv1.IrreconcilableCondition, extra, kraanv1.ReleaseFailedCondition, kraanv1.DeployedCondition}
	var conds []metav1.Condition
	for i, s := range []metav1.ConditionStatus{irreconcilable, secrets, failed, deployed} {
		if s != "" {
			conds = append(conds, metav1.Condition{Type: types[i], Status: s, Reason: types[i] + string(s), Message: "m"})
		}
	}
	Summary(kit.Owned{Type: extra, Failing: metav1.ConditionFalse}).SetReady(&conds, 4)
	ready := apimeta.FindStatusCondition(conds, kraanv1.ReadyCondition)

	wantTrue := irreconcilable != metav1.ConditionTrue && secrets != metav1.ConditionFalse &&
		failed != metav1.ConditionTrue && deployed == metav1.ConditionTrue
	var wantReason string
	switch {
	case irreconcilable == metav1.ConditionTrue:
		wantReason = kraanv1.IrreconcilableCondition + "True"
	case secrets == metav1.ConditionFalse:
		wantReason = extra + "False"
	case failed == metav1.ConditionTrue:
		wantReason = kraanv1.ReleaseFailedCondition + "True"
	case deployed == "":
		wantReason = kraanv1.ReasonNotDeployed
	case deployed == metav1.ConditionTrue:
		wantReason = kraanv1.ReasonReleaseSucceeded
	default:
		wantReason = kraanv1.DeployedCondition + "False"
	}
	name := fmt.Sprintf("irreconcilable=%q secrets=%q failed=%q deployed=%q", irreconcilable, secrets, failed, deployed)
	if (ready.Status == metav1.ConditionTrue) != wantTrue || ready.Reason != wantReason || ready.ObservedGeneration != 4 {
		t.Errorf("%s: Ready %s/%s, want true=%v reason %s", name, ready.Status, ready.Reason, wantTrue, wantReason)
	}
}

// A kind with no extra condition registered is Ready on its release alone:
// a SecretsReady=False another kind's controller would write does not count.
func TestChartSummary_OnlyRegisteredConditionsCount(t *testing.T) {
	conds := []metav1.Condition{
		{Type: kraanv1.DeployedCondition, Status: metav1.ConditionTrue, Reason: kraanv1.ReasonInstallSuccessful, Message: "m"},
		{Type: "SecretsReady", Status: metav1.ConditionFalse, Reason: "SecretNotFound", Message: "m"},
	}
	Summary().SetReady(&conds, 1)
	if ready := apimeta.FindStatusCondition(conds, kraanv1.ReadyCondition); ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s/%s, want True: an unregistered condition counted", ready.Status, ready.Reason)
	}
}

// TestIrreconcilable_ReasonIsTheOutcomes: the condition's reason is the one
// the failing step classed its error with, and its message the error's.
func TestIrreconcilable_ReasonIsTheOutcomes(t *testing.T) {
	g := NewWithT(t)
	condition := func(sc *chartScope) string {
		var conds []metav1.Condition
		setIrreconcilableCondition(&conds, sc, 1)
		c := conds[0]
		return string(c.Status) + "/" + c.Reason + "/" + c.Message
	}
	valuesErr := errors.New(".spec.size: not a number")
	g.Expect(condition(&chartScope{valuesErr: valuesErr, failure: outcome.Terminal(kraanv1.ReasonErrorGettingValues, valuesErr)})).
		To(Equal("True/" + kraanv1.ReasonErrorGettingValues + "/.spec.size: not a number"))
	runErr := errors.New("release storage unreachable")
	g.Expect(condition(&chartScope{runErr: runErr, failure: outcome.Transient(kraanv1.ReasonReconcileError, runErr)})).
		To(Equal("True/" + kraanv1.ReasonReconcileError + "/release storage unreachable"))
	g.Expect(condition(&chartScope{})).To(Equal("False/" + kraanv1.ReasonReconcilable + "/The release can be reconciled"))
}
