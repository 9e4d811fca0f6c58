package chartbacked

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// setChartStatus recomputes the status from what this pass observed: every
// pass, not only at the end as Operator SDK does, so a user sees a failing
// release while it is retried.
func setChartStatus(obj *unstructured.Unstructured, sc *chartScope, summary kit.Summary) {
	conds := chartConditions(obj)
	gen := obj.GetGeneration()
	kit.SetStatusCondition(&conds, metav1.Condition{Type: kraanv1.InitializedCondition, Status: metav1.ConditionTrue,
		Reason: kraanv1.ReasonReconciling, Message: "The release is reconciled", ObservedGeneration: gen})
	latest := sc.result.LatestRevision(helm.Desired{})
	setReleaseDeployedCondition(&conds, latest, gen)
	setReleaseFailedCondition(&conds, sc, gen)
	setIrreconcilableCondition(&conds, sc, gen)
	// Nothing stalls a chart-backed release now; earlier versions set
	// Stalled on a record written outside the operator.
	removeCondition(&conds, kraanv1.StalledCondition)
	summary.SetReady(&conds, gen)
	writeChartConditions(obj, conds)
	setDeployedRelease(obj, latest)
	if sc.valuesErr != nil || sc.runErr == nil {
		// Handled: done, or failed in a way only a new spec fixes.
		_ = unstructured.SetNestedField(obj.Object, gen, "status", "observedGeneration")
	}
}

// setReleaseDeployedCondition reports whether the latest revision is deployed.
func setReleaseDeployedCondition(conds *[]metav1.Condition, rel *helm.Revision, gen int64) {
	c := metav1.Condition{Type: kraanv1.DeployedCondition, Status: metav1.ConditionFalse, Reason: kraanv1.ReasonNotDeployed,
		Message: "No release is deployed", ObservedGeneration: gen}
	if rel.Deployed() {
		c.Status, c.Reason = metav1.ConditionTrue, kraanv1.ReasonUpgradeSuccessful
		if rel.Version == 1 {
			c.Reason = kraanv1.ReasonInstallSuccessful
		}
		c.Message = fmt.Sprintf("Release %s revision %d is deployed", rel.Name, rel.Version)
	}
	kit.SetStatusCondition(conds, c)
}

func setReleaseFailedCondition(conds *[]metav1.Condition, sc *chartScope, gen int64) {
	c := metav1.Condition{Type: kraanv1.ReleaseFailedCondition, Status: metav1.ConditionFalse, Reason: kraanv1.ReasonReleaseSucceeded,
		Message: "The last Helm action succeeded", ObservedGeneration: gen}
	if step, ok := lastFailedAction(sc.result); ok {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, failureReason(step.Action), step.Err.Error()
	}
	kit.SetStatusCondition(conds, c)
}

func setIrreconcilableCondition(conds *[]metav1.Condition, sc *chartScope, gen int64) {
	c := metav1.Condition{Type: kraanv1.IrreconcilableCondition, Status: metav1.ConditionFalse, Reason: kraanv1.ReasonReconcilable,
		Message: "The release can be reconciled", ObservedGeneration: gen}
	_, stepFailed := lastFailedAction(sc.result)
	if sc.failure != nil && (sc.valuesErr != nil || sc.runErr != nil && !stepFailed) {
		// No values from the spec, or the engine failed before any action
		// (storage, the API server): the reason is the one the failing step
		// classed its error with (outcome), as for every kind.
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, outcome.ReasonOf(sc.failure, kraanv1.ReasonReconcileError), sc.failure.Error()
	}
	kit.SetStatusCondition(conds, c)
}

func removeCondition(conds *[]metav1.Condition, condType string) {
	*conds = slices.DeleteFunc(*conds, func(c metav1.Condition) bool { return c.Type == condType })
}

// Summary derives the Ready of a chart-backed kind: ready when deployed with
// no failure outstanding; otherwise the reason of the first problem:
// Irreconcilable, then extra, then ReleaseFailed, then Deployed. extra are
// the conditions the Go half of a hybrid kind writes (Habitat's
// SecretsReady), registered through Options.ExtraConditions.
func Summary(extra ...kit.Owned) kit.Summary {
	owned := make([]kit.Owned, 0, len(extra)+3)
	owned = append(owned, kit.Owned{Type: kraanv1.IrreconcilableCondition, Failing: metav1.ConditionTrue})
	owned = append(owned, extra...)
	owned = append(owned,
		kit.Owned{Type: kraanv1.ReleaseFailedCondition, Failing: metav1.ConditionTrue},
		kit.Owned{Type: kraanv1.DeployedCondition, Failing: metav1.ConditionFalse})
	return kit.Summary{
		Owned:          owned,
		Success:        kraanv1.DeployedCondition,
		SuccessReason:  kraanv1.ReasonReleaseSucceeded,
		NotReadyReason: kraanv1.ReasonNotDeployed,
	}
}

// lastFailedAction is the failed step of the run, if any action failed.
func lastFailedAction(res helm.Result) (helm.ActionTaken, bool) {
	for i := len(res.Taken) - 1; i >= 0; i-- {
		if res.Taken[i].Err != nil {
			return res.Taken[i], true
		}
	}
	return helm.ActionTaken{}, false
}

func failureReason(a helm.Action) string {
	switch a {
	case helm.ActionInstall:
		return kraanv1.ReasonInstallError
	case helm.ActionUpgrade:
		return kraanv1.ReasonUpgradeError
	case helm.ActionRollback:
		return kraanv1.ReasonRollbackError
	case helm.ActionUninstall:
		return kraanv1.ReasonUninstallError
	default:
		return kraanv1.ReasonReconcileError
	}
}

// chartConditions reads the object's conditions; malformed ones are dropped
// and rewritten.
func chartConditions(obj *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
			conds = append(conds, c)
		}
	}
	return conds
}

func writeChartConditions(obj *unstructured.Unstructured, conds []metav1.Condition) {
	out := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err == nil {
			out = append(out, m)
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, out, "status", "conditions")
}

// setDeployedRelease records which release is in storage, or removes the
// record when there is none. It names the revision and its status, never
// the rendered manifest: a chart that renders a Secret would publish its
// data to everyone who may read the object.
func setDeployedRelease(obj *unstructured.Unstructured, rel *helm.Revision) {
	if rel == nil {
		unstructured.RemoveNestedField(obj.Object, "status", "deployedRelease")
		return
	}
	_ = unstructured.SetNestedMap(obj.Object, map[string]any{
		"name": rel.Name, "revision": int64(rel.Version), "status": rel.Status,
	}, "status", "deployedRelease")
}

// recordFailures emits a Warning event naming the failed action; the reason
// equals the condition reason.
func (r *Reconciler) recordFailures(obj *unstructured.Unstructured, sc *chartScope) {
	if out := sc.result.WrittenOutside; out != nil {
		r.Events.Warning(obj, kraanv1.ReasonReleaseWrittenOutside, out.OutsideReport())
	}
	if step, ok := lastFailedAction(sc.result); ok {
		r.Events.Warning(obj, failureReason(step.Action), step.Err.Error())
		return
	}
	if sc.valuesErr != nil && sc.failure != nil {
		r.Events.Warning(obj, outcome.ReasonOf(sc.failure, kraanv1.ReasonErrorGettingValues), sc.failure.Error())
	}
}
