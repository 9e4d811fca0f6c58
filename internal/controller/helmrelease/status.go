package helmrelease

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// maxStatusHistory is how many release snapshots status keeps.
const maxStatusHistory = 5

// logTailInMessage is how many of Helm's last log lines a failure message carries.
const logTailInMessage = 3

// summaryFor declares how Ready is derived: the first failing condition of
// the list, in this order, gives Ready its status, reason and message;
// otherwise Ready repeats Released. A test failure counts only when the spec
// does not ignore test failures.
func summaryFor(hr *kraanv1.HelmRelease) kit.Summary {
	owned := []kit.Owned{
		{Type: kraanv1.StalledCondition, Failing: metav1.ConditionTrue},
		{Type: kraanv1.ReconcilingCondition, Failing: metav1.ConditionTrue,
			UnknownReasons: []string{kraanv1.ReasonProgressing, kraanv1.ReasonRolloutQueued}},
		{Type: kraanv1.RemediatedCondition, Failing: metav1.ConditionTrue},
	}
	if !releasespec.PolicyOf(&hr.Spec).IgnoreTestFailures {
		owned = append(owned, kit.Owned{Type: kraanv1.TestSuccessCondition, Failing: metav1.ConditionFalse})
	}
	owned = append(owned, kit.Owned{Type: kraanv1.ReleasedCondition, Failing: metav1.ConditionFalse})
	return kit.Summary{
		Owned:          owned,
		Success:        kraanv1.ReleasedCondition,
		SuccessReason:  kraanv1.ReasonSucceeded,
		NotReadyReason: kraanv1.ReasonProgressing,
	}
}

// summarize sets Ready from the other conditions; nothing else sets Ready.
func summarize(hr *kraanv1.HelmRelease) {
	summaryFor(hr).SetReady(&hr.Status.Conditions, hr.Generation)
}

func isReady(hr *kraanv1.HelmRelease) bool {
	return apimeta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.ReadyCondition)
}

func setCondition(hr *kraanv1.HelmRelease, condType string, status metav1.ConditionStatus, reason, msg string) {
	kit.SetCondition(&hr.Status.Conditions, hr.Generation, condType, status, reason, msg)
}

// reportProgress marks the release Reconciling, naming the Helm action about
// to run, and writes it at once: an install or upgrade waits up to its
// timeout, and a user watching the object sees what it is doing meanwhile.
func (r *Reconciler) reportProgress(ctx context.Context, sc *releaseScope, action helm.Action) {
	hr := sc.hr
	target := r.targetOf(hr)
	msg := fmt.Sprintf("Running %s of release %s/%s with chart %s@%s",
		action, target.StorageNamespace, target.ReleaseName, sc.desired.ChartName(), sc.desired.ChartVersion())
	setCondition(hr, kraanv1.ReconcilingCondition, metav1.ConditionTrue, kraanv1.ReasonProgressing, msg)
	summarize(hr)
	sent, err := sc.patcher.Write(ctx, hr)
	if sent {
		r.Metrics.wroteStatus(writeProgress)
	}
	if err != nil {
		// The action runs anyway; the final patch reports its outcome.
		ctrl.LoggerFrom(ctx).Error(err, "Reporting progress", "action", string(action))
	}
}

// Finish records the outcome of the steps in the conditions, summarizes
// Ready, writes the status once and decides the requeue from the error's
// class: terminal errors wait for a change, waits requeue after their delay,
// transient errors back off.
func (r *Reconciler) Finish(ctx context.Context, sc *releaseScope, res ctrl.Result, err error) (ctrl.Result, error) {
	hr := sc.hr
	if sc.starting == nil && !sc.queued {
		// Nothing to roll out now: the slot and the place in the queue go
		// to the next release.
		r.runs.ForgetRollout(ctrlKey(hr))
	}
	if sc.deleted {
		return res, err
	}
	if sc.starting != nil && !sc.ran && err == nil {
		// Nothing to report yet: the run reports its progress, and the
		// reconcile its end triggers records the outcome.
		r.launchStarted(ctx, sc)
		return ctrl.Result{}, nil
	}
	// Errors and Helm's messages may quote values from Secrets: mask them
	// before anything is written, recorded or logged.
	err = sc.redactor.Error(err)
	r.recordOutcome(sc, res, err)
	patchErr := r.writeStatus(ctx, sc)
	if sc.starting != nil && err == nil {
		r.launchStarted(ctx, sc)
		return ctrl.Result{}, patchErr
	}
	if patchErr != nil && err == nil {
		return ctrl.Result{}, patchErr
	}
	switch {
	case err != nil:
		if outcome.Classify(err) == outcome.ClassTerminal {
			ctrl.LoggerFrom(ctx).Info("Stalled until the spec or a source changes", "reason", outcome.ReasonOf(err, ""), "error", err.Error())
		}
		return kit.ResultOf(err)
	case sc.suspended || !res.IsZero():
		return res, nil
	}
	return ctrl.Result{RequeueAfter: r.periodicRequeue(ctx, hr)}, nil
}

// writeStatus writes the status a reconcile ends with, and counts the
// write by its cause.
func (r *Reconciler) writeStatus(ctx context.Context, sc *releaseScope) error {
	sent, err := sc.patcher.Write(ctx, sc.hr)
	if sent {
		cause := writeReconcile
		if sc.queued {
			cause = writeQueued
		}
		r.Metrics.wroteStatus(cause)
	}
	r.runs.Written.Wrote(ctrlKey(sc.hr), statusDigest(sc.hr))
	return err
}

// recordOutcome sets the conditions from how the steps ended, masked, and
// Ready from them.
func (r *Reconciler) recordOutcome(sc *releaseScope, res ctrl.Result, err error) {
	hr := sc.hr
	if !sc.suspended {
		setOutcomeConditions(sc, res, err)
	}
	for i := range hr.Status.Conditions {
		hr.Status.Conditions[i].Message = sc.redactor.String(hr.Status.Conditions[i].Message)
	}
	summarize(hr)
	r.Metrics.setReady(hr.Namespace, hr.Name, isReady(hr))
}

// requeueInterval is spec.interval, or the chart's own spec.chart.spec.interval
// (how often Flux checks the chart source) when that is shorter.
func requeueInterval(hr *kraanv1.HelmRelease) time.Duration {
	interval := hr.Spec.Interval.Duration
	if c := hr.Spec.Chart; c != nil && c.Spec.Interval != nil && c.Spec.Interval.Duration > 0 {
		interval = min(interval, c.Spec.Interval.Duration)
	}
	return interval
}

// setOutcomeConditions sets Stalled and Reconciling from how the steps ended,
// and moves observedGeneration when the generation was fully handled: in
// sync, or stalled on a terminal error.
func setOutcomeConditions(sc *releaseScope, res ctrl.Result, err error) {
	hr := sc.hr
	conds := &hr.Status.Conditions
	switch {
	case err == nil && sc.starting != nil:
		msg := fmt.Sprintf("Running Helm for chart %s@%s", sc.desired.ChartName(), sc.desired.ChartVersion())
		if last := lastFailureMessage(sc.run.Taken); last != "" {
			msg += "; last failure: " + last
		}
		apimeta.RemoveStatusCondition(conds, kraanv1.StalledCondition)
		setCondition(hr, kraanv1.ReconcilingCondition, metav1.ConditionTrue, kraanv1.ReasonProgressing, msg)
	case err == nil && res.IsZero():
		apimeta.RemoveStatusCondition(conds, kraanv1.StalledCondition)
		apimeta.RemoveStatusCondition(conds, kraanv1.ReconcilingCondition)
		if !remediatedIn(sc.run.Taken) {
			apimeta.RemoveStatusCondition(conds, kraanv1.RemediatedCondition)
		}
		hr.Status.ObservedGeneration = hr.Generation
	case err == nil:
		msg := "Next action: " + string(sc.run.Next)
		if last := lastFailureMessage(sc.run.Taken); last != "" {
			msg += "; last failure: " + last
		}
		apimeta.RemoveStatusCondition(conds, kraanv1.StalledCondition)
		setCondition(hr, kraanv1.ReconcilingCondition, metav1.ConditionTrue, kraanv1.ReasonProgressing, msg)
	case outcome.Classify(err) == outcome.ClassTerminal:
		apimeta.RemoveStatusCondition(conds, kraanv1.ReconcilingCondition)
		setCondition(hr, kraanv1.StalledCondition, metav1.ConditionTrue, outcome.ReasonOf(err, kraanv1.ReasonReconcileError), err.Error())
		hr.Status.ObservedGeneration = hr.Generation
	default:
		apimeta.RemoveStatusCondition(conds, kraanv1.StalledCondition)
		setCondition(hr, kraanv1.ReconcilingCondition, metav1.ConditionTrue, outcome.ReasonOf(err, kraanv1.ReasonReconcileError), err.Error())
	}
}
