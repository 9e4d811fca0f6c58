package helmrelease

import (
	"errors"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// What a Helm run did, turned into the release's status: the attempt, the
// history of snapshots, the Released, TestSuccess and Drifted conditions, the
// events and metrics of each action.

// recordRun turns what the engine did in run into status, events and
// metrics.
func (r *Reconciler) recordRun(sc *releaseScope, run *run) {
	res, runErr := run.Outcome()
	hr, desired := sc.hr, run.For.desired
	s := &hr.Status
	s.LastAttemptedRevision = desired.ChartVersion()
	s.LastAttemptedRevisionDigest = desired.ChartDigest
	s.LastAttemptedSourceRevision = run.For.sourceRevision
	s.LastAttemptedValuesChecksum = attemptDigest(desired)
	s.LastAttemptedConfigDigest = helm.ValuesDigest(desired.Values)
	s.LastAttemptedGeneration = run.Generation
	s.LastHandledReconcileAt = run.For.handledReconcileAt
	s.LastHandledForceAt, s.LastHandledResetAt = run.For.handledForceAt, run.For.handledResetAt
	for _, step := range res.Taken {
		if step.Action == helm.ActionInstall || step.Action == helm.ActionUpgrade {
			s.LastAttemptedReleaseAction = string(step.Action)
			s.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: step.Duration}
			s.ObservedPostRenderersDigest = desired.PostRenderersDigest
		}
	}
	s.InstallFailures, s.UpgradeFailures = int64(res.Failures.Install), int64(res.Failures.Upgrade)
	s.Failures = s.InstallFailures + s.UpgradeFailures
	s.StorageNamespace = r.targetOf(hr).StorageNamespace
	if out := res.WrittenOutside; out != nil {
		// Helm's description of a failed revision may quote what the API
		// server refused, values included.
		r.Events.Warning(hr, kraanv1.ReasonReleaseWrittenOutside, sc.redactor.String(out.OutsideReport()))
	}
	for _, step := range res.Taken {
		r.recordStep(hr, step)
	}
	latest := res.LatestRevision(desired)
	recordSnapshot(hr, latest, releaseActionOf(latest, storageChangingActions(res.Taken, runErr), hr.Status.History))
	r.recordInventory(hr, run.Request.Target, latest, desired)
	setReleasedCondition(hr, latest, res.Taken)
	setTestCondition(hr, latest)
}

// storageChangingActions are the steps of a run that may have written to
// release storage: all of them, but for a last failed step that ended the
// run with its own error — the engine stops there only when storage is as
// the step found it (a denied or invalid action), and never for RetryLater.
func storageChangingActions(steps []helm.ActionTaken, runErr error) []helm.ActionTaken {
	var later *helm.RetryLater
	if n := len(steps); n > 0 && steps[n-1].Err != nil && runErr != nil && !errors.As(runErr, &later) {
		return steps[:n-1]
	}
	return steps
}

// releaseActionOf is Flux's history[].action of latest: the action that
// made the revision what it is. A revision status already reports with the
// same status keeps its action (a test, a failed attempt that wrote nothing,
// a resync); otherwise it is the last step of the run that wrote a revision.
// An unlock only marks a revision failed, so it keeps the action reported
// for it. A revision no step of this run explains (made by an earlier run
// whose result was not reported, or by someone else) is named from the
// description Helm wrote on it.
func releaseActionOf(latest *helm.Revision, steps []helm.ActionTaken, history []kraanv1.Snapshot) kraanv1.ReleaseAction {
	if latest == nil {
		return ""
	}
	sameRevision := len(history) > 0 && history[0].Name == latest.Name && history[0].Version == latest.Version
	if sameRevision && history[0].Status == latest.Status {
		return history[0].Action
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if action, ok := revisionActions[steps[i].Action]; ok {
			return action
		}
		if steps[i].Action == helm.ActionUnlock {
			break
		}
	}
	if sameRevision && history[0].Action != "" {
		return history[0].Action
	}
	return actionFromDescription(latest)
}

// actionFromDescription names the action that made rev from the description
// Helm (3 and 4) writes on a revision; empty when it does not tell.
func actionFromDescription(rev *helm.Revision) kraanv1.ReleaseAction {
	d := rev.Description
	switch {
	case d == "Install complete" || d == "Initial install underway":
		return kraanv1.ReleaseActionInstall
	case d == "Upgrade complete" || d == "Preparing upgrade" || strings.HasPrefix(d, `Upgrade "`):
		return kraanv1.ReleaseActionUpgrade
	case strings.HasPrefix(d, "Rollback to ") || strings.HasPrefix(d, `Rollback "`):
		return kraanv1.ReleaseActionRollback
	case d == "Uninstallation complete":
		return kraanv1.ReleaseActionUninstall
	case strings.HasPrefix(d, `Release "`) && rev.Version == 1:
		return kraanv1.ReleaseActionInstall // a failed first install
	}
	return ""
}

// revisionActions are the engine's actions that write a revision, as
// Flux's release actions; the engine uninstalls only to remediate.
var revisionActions = map[helm.Action]kraanv1.ReleaseAction{
	helm.ActionInstall:   kraanv1.ReleaseActionInstall,
	helm.ActionUpgrade:   kraanv1.ReleaseActionUpgrade,
	helm.ActionRollback:  kraanv1.ReleaseActionRollback,
	helm.ActionUninstall: kraanv1.ReleaseActionUninstallRemediation,
}

func (r *Reconciler) recordStep(hr *kraanv1.HelmRelease, step helm.ActionTaken) {
	reason, ok := stepReasons[step.Action]
	if !ok {
		return
	}
	outcome, msg := outcomeSuccess, fmt.Sprintf("Helm %s succeeded in %s", step.Action, step.Duration.Round(1e6))
	if step.Detail != "" {
		msg += ": " + step.Detail
	}
	if step.Err != nil {
		outcome, msg = outcomeFailure, stepFailure(step)
	}
	r.Metrics.observeAction(string(step.Action), outcome, step.Duration)
	if step.Err != nil {
		r.Events.Warning(hr, reason[outcome], msg)
	} else {
		r.Events.Normal(hr, reason[outcome], msg)
	}
	switch {
	case step.Reinstall: // a chart name change, not a remediation
	case step.Action == helm.ActionRollback, step.Action == helm.ActionUninstall:
		status := metav1.ConditionTrue
		if step.Err != nil {
			status = metav1.ConditionFalse
		}
		setCondition(hr, kraanv1.RemediatedCondition, status, reason[outcome], msg)
	}
}

// Outcomes of a Helm action, the values of the metrics' outcome label.
const (
	outcomeSuccess = "success"
	outcomeFailure = "failure"
)

// stepReasons maps an action and its outcome to the condition and event reason.
var stepReasons = map[helm.Action]map[string]string{
	helm.ActionInstall:   {outcomeSuccess: kraanv1.ReasonInstallSucceeded, outcomeFailure: kraanv1.ReasonInstallFailed},
	helm.ActionUpgrade:   {outcomeSuccess: kraanv1.ReasonUpgradeSucceeded, outcomeFailure: kraanv1.ReasonUpgradeFailed},
	helm.ActionTest:      {outcomeSuccess: kraanv1.ReasonTestSucceeded, outcomeFailure: kraanv1.ReasonTestFailed},
	helm.ActionRollback:  {outcomeSuccess: kraanv1.ReasonRollbackSucceeded, outcomeFailure: kraanv1.ReasonRollbackFailed},
	helm.ActionUninstall: {outcomeSuccess: kraanv1.ReasonUninstallSucceeded, outcomeFailure: kraanv1.ReasonUninstallFailed},
	helm.ActionUnlock:    {outcomeSuccess: kraanv1.ReasonUnlocked, outcomeFailure: kraanv1.ReasonUnlockFailed},
}

// stepFailure is the error with the end of Helm's log, which names the object
// a wait gave up on and why.
func stepFailure(step helm.ActionTaken) string {
	msg := step.Err.Error()
	tail := step.LogTail
	if len(tail) > logTailInMessage {
		tail = tail[len(tail)-logTailInMessage:]
	}
	if len(tail) > 0 {
		msg += "; last Helm log: " + strings.Join(tail, " | ")
	}
	return msg
}

// lastFailedAction is the last step of a run that failed.
func lastFailedAction(steps []helm.ActionTaken) (helm.ActionTaken, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Err != nil {
			return steps[i], true
		}
	}
	return helm.ActionTaken{}, false
}

func lastFailureMessage(steps []helm.ActionTaken) string {
	if step, ok := lastFailedAction(steps); ok {
		return stepFailure(step)
	}
	return ""
}

// stalledMessage says that retries are exhausted and what failed last: in
// this run, or as reported before (a release stays stalled on one failure
// across reconciles).
func stalledMessage(sc *releaseScope) string {
	hr := sc.hr
	msg := fmt.Sprintf("Retries exhausted after %d failed attempts; change the spec or its values, or set the %s and %s annotations to one new value (flux reconcile hr --reset), to try again",
		hr.Status.Failures, resetAtAnnotation, requestedAtAnnotation)
	if last := lastFailureMessage(sc.run.Taken); last != "" {
		return msg + ": " + last
	}
	if stalled := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.StalledCondition); stalled != nil &&
		stalled.Status == metav1.ConditionTrue && stalled.Reason == kraanv1.ReasonRetriesExceeded {
		return stalled.Message
	}
	for _, t := range []string{kraanv1.TestSuccessCondition, kraanv1.ReleasedCondition} {
		if c := apimeta.FindStatusCondition(hr.Status.Conditions, t); c != nil && c.Status == metav1.ConditionFalse {
			return msg + ": " + c.Message
		}
	}
	return msg
}

func remediatedIn(steps []helm.ActionTaken) bool {
	for _, s := range steps {
		if s.Err == nil && !s.Reinstall && (s.Action == helm.ActionRollback || s.Action == helm.ActionUninstall) {
			return true
		}
	}
	return false
}

func readyMessage(rev *helm.Revision) string {
	return fmt.Sprintf("Release %s/%s.v%d with chart %s@%s is %s",
		rev.Namespace, rev.Name, rev.Version, rev.ChartName, rev.ChartVersion, rev.Status)
}

// setReleasedCondition reports the last install or upgrade, naming the
// action that ran: a failed first install is InstallFailed, not UpgradeFailed.
func setReleasedCondition(hr *kraanv1.HelmRelease, latest *helm.Revision, steps []helm.ActionTaken) {
	for i := len(steps) - 1; i >= 0; i-- {
		step := steps[i]
		if step.Err != nil && (step.Action == helm.ActionInstall || step.Action == helm.ActionUpgrade) {
			setCondition(hr, kraanv1.ReleasedCondition, metav1.ConditionFalse, stepReasons[step.Action][outcomeFailure], stepFailure(step))
			return
		}
	}
	switch {
	case latest == nil:
		apimeta.RemoveStatusCondition(&hr.Status.Conditions, kraanv1.ReleasedCondition)
	case latest.Deployed() && latest.Matches:
		reason := kraanv1.ReasonUpgradeSucceeded
		if latest.Version == 1 {
			reason = kraanv1.ReasonInstallSucceeded
		}
		setCondition(hr, kraanv1.ReleasedCondition, metav1.ConditionTrue, reason, readyMessage(latest))
	case latest.Failed():
		if c := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReleasedCondition); c != nil &&
			c.Status == metav1.ConditionFalse && (c.Reason == kraanv1.ReasonInstallFailed || c.Reason == kraanv1.ReasonUpgradeFailed) {
			return // reported when the action failed, with Helm's log
		}
		reason := kraanv1.ReasonUpgradeFailed
		if latest.Version == 1 {
			reason = kraanv1.ReasonInstallFailed
		}
		setCondition(hr, kraanv1.ReleasedCondition, metav1.ConditionFalse, reason, latest.Description)
	}
}

func setTestCondition(hr *kraanv1.HelmRelease, latest *helm.Revision) {
	if latest == nil || !latest.TestsRan {
		apimeta.RemoveStatusCondition(&hr.Status.Conditions, kraanv1.TestSuccessCondition)
		return
	}
	if latest.TestsFailed {
		setCondition(hr, kraanv1.TestSuccessCondition, metav1.ConditionFalse, kraanv1.ReasonTestFailed,
			fmt.Sprintf("A test hook of revision %d failed", latest.Version))
		return
	}
	setCondition(hr, kraanv1.TestSuccessCondition, metav1.ConditionTrue, kraanv1.ReasonTestSucceeded,
		fmt.Sprintf("Tests of revision %d passed", latest.Version))
}

// recordSnapshot puts the latest revision, made by action, at the head of
// status.history.
func recordSnapshot(hr *kraanv1.HelmRelease, rev *helm.Revision, action kraanv1.ReleaseAction) {
	if rev == nil {
		return
	}
	snap := kraanv1.Snapshot{
		Name: rev.Name, Namespace: rev.Namespace, Version: rev.Version, Status: rev.Status, Action: action,
		ChartName: rev.ChartName, ChartVersion: rev.ChartVersion, AppVersion: rev.AppVersion,
		Digest: rev.ChartDigest, ConfigDigest: rev.ConfigDigest,
		FirstDeployed: metav1.NewTime(rev.FirstDeployed), LastDeployed: metav1.NewTime(rev.LastDeployed),
	}
	for name, run := range rev.TestHooks {
		if snap.TestHooks == nil {
			snap.TestHooks = map[string]kraanv1.TestHookStatus{}
		}
		snap.TestHooks[name] = kraanv1.TestHookStatus{
			LastStarted: metav1.NewTime(run.Started), LastCompleted: metav1.NewTime(run.Completed), Phase: run.Phase,
		}
	}
	if rev.TestsRan {
		snap.TestResult = "Succeeded"
		if rev.TestsFailed {
			snap.TestResult = "Failed"
		}
	}
	history := hr.Status.History
	if len(history) > 0 && history[0].Version == snap.Version && history[0].Name == snap.Name {
		history = history[1:]
	}
	history = append([]kraanv1.Snapshot{snap}, history...)
	if len(history) > maxStatusHistory {
		history = history[:maxStatusHistory]
	}
	hr.Status.History = history
}

// setDriftCondition reports what a drift check found.
func setDriftCondition(hr *kraanv1.HelmRelease, report helm.DriftReport) {
	switch {
	case len(report.Drifted) == 0:
		setCondition(hr, kraanv1.DriftedCondition, metav1.ConditionFalse, kraanv1.ReasonNoDriftDetected,
			"The cluster matches the release manifest")
	case report.Corrected:
		setCondition(hr, kraanv1.DriftedCondition, metav1.ConditionFalse, kraanv1.ReasonDriftCorrected,
			"Drift corrected: "+report.Message())
	default:
		setCondition(hr, kraanv1.DriftedCondition, metav1.ConditionTrue, kraanv1.ReasonDriftDetected, report.Message())
	}
}
