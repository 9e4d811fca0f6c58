package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// maxStatusHistory is how many release snapshots status keeps.
const maxStatusHistory = 5

// logTailInMessage is how many of Helm's last log lines a failure message carries.
const logTailInMessage = 3

func setCondition(hr *kraanv1.HelmRelease, condType string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: msg, ObservedGeneration: hr.Generation,
	})
}

// setNotReady reports a reason the release cannot progress for now.
func setNotReady(hr *kraanv1.HelmRelease, reason, msg string) {
	setCondition(hr, kraanv1.ReadyCondition, metav1.ConditionFalse, reason, msg)
}

func isReady(conditions []metav1.Condition) bool {
	return apimeta.IsStatusConditionTrue(conditions, kraanv1.ReadyCondition)
}

// recordRun turns what the engine did into status, events and metrics.
func (r *HelmReleaseReconciler) recordRun(hr *kraanv1.HelmRelease, desired helm.Desired, res helm.Result, runErr error) {
	s := &hr.Status
	s.LastAttemptedRevision = desired.Chart.Metadata.Version
	s.LastAttemptedValuesChecksum = attemptDigest(desired)
	s.LastAttemptedGeneration = hr.Generation
	s.LastHandledReconcileAt = hr.Annotations[requestedAtAnnotation]
	s.InstallFailures, s.UpgradeFailures = int64(res.Failures.Install), int64(res.Failures.Upgrade)
	s.Failures = s.InstallFailures + s.UpgradeFailures
	s.StorageNamespace = r.targetOf(hr).StorageNamespace
	for _, step := range res.Steps {
		r.recordStep(hr, step)
	}
	recordSnapshot(hr, res.Latest)
	setReleasedCondition(hr, res.Latest, desired)
	setTestCondition(hr, res.Latest)
	lastFailure := lastFailureMessage(res.Steps)
	if lastFailure == "" {
		lastFailure = previousFailure(hr)
	}
	switch {
	case runErr != nil:
		reason := kraanv1.ReasonReconcileError
		if apierrors.IsForbidden(runErr) {
			// The message names the verb, the resource and the impersonated
			// service account: what a tenant's RBAC lacks.
			reason = kraanv1.ReasonAccessDenied
		}
		setCondition(hr, kraanv1.ReconcilingCondition, metav1.ConditionTrue, reason, runErr.Error())
		setNotReady(hr, reason, runErr.Error())
	case res.Next == helm.ActionStalled:
		msg := fmt.Sprintf("Retries exhausted after %d failed attempts; change the spec or its values, or set the %s annotation, to try again", s.Failures, requestedAtAnnotation)
		if lastFailure != "" {
			msg += ": " + lastFailure
		} else if stalled := apimeta.FindStatusCondition(s.Conditions, kraanv1.StalledCondition); stalled != nil {
			msg = stalled.Message // still stalled on the same failure
		}
		setCondition(hr, kraanv1.StalledCondition, metav1.ConditionTrue, kraanv1.ReasonRetriesExceeded, msg)
		apimeta.RemoveStatusCondition(&s.Conditions, kraanv1.ReconcilingCondition)
		setNotReady(hr, kraanv1.ReasonRetriesExceeded, msg)
		s.ObservedGeneration = hr.Generation
	case res.Next == helm.ActionNone:
		apimeta.RemoveStatusCondition(&s.Conditions, kraanv1.StalledCondition)
		apimeta.RemoveStatusCondition(&s.Conditions, kraanv1.ReconcilingCondition)
		if !remediatedIn(res.Steps) {
			apimeta.RemoveStatusCondition(&s.Conditions, kraanv1.RemediatedCondition)
		}
		setCondition(hr, kraanv1.ReadyCondition, metav1.ConditionTrue, kraanv1.ReasonSucceeded, readyMessage(res.Latest))
		s.ObservedGeneration = hr.Generation
	default: // took the maximum number of steps; the next pass goes on
		setCondition(hr, kraanv1.ReconcilingCondition, metav1.ConditionTrue, kraanv1.ReasonProgressing, "Next action: "+string(res.Next))
		setNotReady(hr, kraanv1.ReasonProgressing, lastFailure)
	}
}

func (r *HelmReleaseReconciler) recordStep(hr *kraanv1.HelmRelease, step helm.Step) {
	reason, ok := stepReasons[step.Action]
	if !ok {
		return
	}
	outcome, eventType, msg := outcomeSuccess, "Normal", fmt.Sprintf("Helm %s succeeded in %s", step.Action, step.Duration.Round(1e6))
	if step.Detail != "" {
		msg += ": " + step.Detail
	}
	if step.Err != nil {
		outcome, eventType, msg = outcomeFailure, "Warning", stepFailure(step)
	}
	r.Metrics.observeAction(string(step.Action), outcome, step.Duration)
	r.event(hr, eventType, reason[outcome], msg)
	switch step.Action {
	case helm.ActionRollback, helm.ActionUninstall:
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
func stepFailure(step helm.Step) string {
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

func lastFailureMessage(steps []helm.Step) string {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Err != nil {
			return stepFailure(steps[i])
		}
	}
	return ""
}

// previousFailure is the failure the Ready condition reports from an earlier
// pass, so that a stalled release still says what failed.
func previousFailure(hr *kraanv1.HelmRelease) string {
	ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse {
		return ""
	}
	switch ready.Reason {
	case kraanv1.ReasonRetriesExceeded, kraanv1.ReasonDependencyNotReady:
		return ""
	}
	return ready.Message
}

func remediatedIn(steps []helm.Step) bool {
	for _, s := range steps {
		if s.Err == nil && (s.Action == helm.ActionRollback || s.Action == helm.ActionUninstall) {
			return true
		}
	}
	return false
}

func readyMessage(rel *release.Release) string {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return "Release in sync"
	}
	return fmt.Sprintf("Release %s/%s.v%d with chart %s@%s is %s",
		rel.Namespace, rel.Name, rel.Version, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Info.Status)
}

func setReleasedCondition(hr *kraanv1.HelmRelease, latest *release.Release, desired helm.Desired) {
	switch {
	case latest == nil:
		apimeta.RemoveStatusCondition(&hr.Status.Conditions, kraanv1.ReleasedCondition)
	case latest.Info.Status == release.StatusDeployed && desired.Matches(latest):
		reason := kraanv1.ReasonUpgradeSucceeded
		if latest.Version == 1 {
			reason = kraanv1.ReasonInstallSucceeded
		}
		setCondition(hr, kraanv1.ReleasedCondition, metav1.ConditionTrue, reason, readyMessage(latest))
	case latest.Info.Status == release.StatusFailed:
		setCondition(hr, kraanv1.ReleasedCondition, metav1.ConditionFalse, kraanv1.ReasonUpgradeFailed, latest.Info.Description)
	}
}

func setTestCondition(hr *kraanv1.HelmRelease, latest *release.Release) {
	if latest == nil || !helm.TestsRan(latest) {
		apimeta.RemoveStatusCondition(&hr.Status.Conditions, kraanv1.TestSuccessCondition)
		return
	}
	if helm.TestsFailed(latest) {
		setCondition(hr, kraanv1.TestSuccessCondition, metav1.ConditionFalse, kraanv1.ReasonTestFailed,
			fmt.Sprintf("A test hook of revision %d failed", latest.Version))
		return
	}
	setCondition(hr, kraanv1.TestSuccessCondition, metav1.ConditionTrue, kraanv1.ReasonTestSucceeded,
		fmt.Sprintf("Tests of revision %d passed", latest.Version))
}

// recordSnapshot puts the latest revision at the head of status.history.
func recordSnapshot(hr *kraanv1.HelmRelease, rel *release.Release) {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return
	}
	snap := kraanv1.Snapshot{
		Name: rel.Name, Namespace: rel.Namespace, Version: rel.Version, Status: string(rel.Info.Status),
		ChartName: rel.Chart.Metadata.Name, ChartVersion: rel.Chart.Metadata.Version,
		Digest: rel.Labels[helm.ChartDigestLabel], ConfigDigest: helm.ValuesDigest(rel.Config),
		FirstDeployed: metav1.NewTime(rel.Info.FirstDeployed.Time), LastDeployed: metav1.NewTime(rel.Info.LastDeployed.Time),
	}
	if helm.TestsRan(rel) {
		snap.TestResult = "Succeeded"
		if helm.TestsFailed(rel) {
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

// patchStatus writes status once per reconcile and updates the Ready gauge.
func (r *HelmReleaseReconciler) patchStatus(ctx context.Context, hr *kraanv1.HelmRelease, patch client.Patch, reconcileErr error) error {
	if reconcileErr != nil && !apimeta.IsStatusConditionPresentAndEqual(hr.Status.Conditions, kraanv1.ReadyCondition, metav1.ConditionFalse) {
		setNotReady(hr, kraanv1.ReasonReconcileError, reconcileErr.Error())
	}
	if hr.DeletionTimestamp.IsZero() {
		r.Metrics.setReady(hr.Namespace, hr.Name, isReady(hr.Status.Conditions))
	}
	err := r.Status().Patch(ctx, hr, patch)
	if apierrors.IsNotFound(err) || (err != nil && errors.Is(err, context.Canceled)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

func (r *HelmReleaseReconciler) event(obj client.Object, eventType, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, reason, "%s", msg)
	}
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
