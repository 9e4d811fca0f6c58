package helm

import (
	"time"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// Action is what the engine does next to a release.
type Action string

// The actions, in the words of the Helm CLI.
const (
	// ActionNone means the release is deployed and in sync: nothing to do, and
	// in particular no new revision.
	ActionNone Action = "none"
	// ActionInstall installs a release that storage does not hold.
	ActionInstall Action = "install"
	// ActionUpgrade moves a release to the desired chart and values.
	ActionUpgrade Action = "upgrade"
	// ActionTest runs the chart's test hooks on the deployed revision.
	ActionTest Action = "test"
	// ActionRollback rolls a failed upgrade back to the previous deployed revision.
	ActionRollback Action = "rollback"
	// ActionUninstall removes a failed release (remediation) before a new install.
	ActionUninstall Action = "uninstall"
	// ActionUnlock marks a release left pending by a crashed operation as failed,
	// so that it can be remediated instead of blocking every later operation
	// with "another operation is in progress".
	ActionUnlock Action = "unlock"
	// ActionResume waits again for the objects of a revision an interrupted
	// install or upgrade left pending (the operator stopped during Helm's
	// wait), and finishes it as the action would have.
	ActionResume Action = "resume"
	// ActionStalled means retries are exhausted: only a change of the spec, its
	// values or a reconcile request clears it.
	ActionStalled Action = "stalled"
)

// Observation is what Helm storage holds for a release.
type Observation struct {
	// Latest is the newest revision, whatever its status; nil when there is none.
	Latest *release.Release
	// PreviousDeployed is the newest revision older than Latest that was
	// deployed (its status now deployed or superseded): the rollback target.
	PreviousDeployed *release.Release
}

// Policy is what the HelmRelease spec says about tests and remediation, with
// Flux's defaults applied.
type Policy struct {
	TestEnable               bool
	IgnoreTestFailures       bool
	InstallRetries           int
	InstallRemediateLast     bool
	UpgradeRetries           int
	UpgradeRemediateLast     bool
	UpgradeStrategyUninstall bool
	// InstallRetryInterval and UpgradeRetryInterval are set under the
	// RetryOnFailure strategy: a failed action is tried again after the
	// interval, without remediation and without limit.
	InstallRetryInterval time.Duration
	UpgradeRetryInterval time.Duration
	// TestSelected says whether spec.test.filters select a test hook by
	// name; nil selects all. An unselected hook never runs, so it must not
	// count as a test still to run.
	TestSelected func(name string) bool
}

// selected reports whether the policy runs test hook h.
func (p Policy) selected(h *release.Hook) bool {
	return isTestHook(h) && (p.TestSelected == nil || p.TestSelected(h.Name))
}

// hasTests and testsRan are HasTests and TestsRan over the selected hooks.
func (p Policy) hasTests(rel *release.Release) bool {
	for _, h := range rel.Hooks {
		if p.selected(h) {
			return true
		}
	}
	return false
}

func (p Policy) testsRan(rel *release.Release) bool {
	for _, h := range rel.Hooks {
		if p.selected(h) && !h.LastRun.StartedAt.IsZero() {
			return true
		}
	}
	return false
}

// retryInterval is the RetryOnFailure interval that applies to obs: the
// install strategy's until a revision was deployed, then the upgrade's.
func (p Policy) retryInterval(obs Observation) time.Duration {
	if obs.PreviousDeployed == nil && (obs.Latest == nil || obs.Latest.Info == nil || obs.Latest.Info.Status != rcommon.StatusDeployed) {
		return p.InstallRetryInterval
	}
	if obs.PreviousDeployed == nil && obs.Latest != nil && TestsFailed(obs.Latest) {
		return p.InstallRetryInterval // its first deployment's tests failed
	}
	return p.UpgradeRetryInterval
}

// Failures are the consecutive failed attempts at the desired state, counted by
// the controller and reset when the desired chart or values change.
type Failures struct {
	Install int
	Upgrade int
}

// Plan decides the next action from the observation. matches says whether a
// revision was made from the desired chart and values.
func Plan(obs Observation, matches func(*release.Release) bool, policy Policy, failures Failures) Action {
	latest := obs.Latest
	if latest == nil || latest.Info == nil {
		return installOrStall(policy, failures)
	}
	status := latest.Info.Status
	switch {
	case status.IsPending():
		return ActionUnlock
	case status == rcommon.StatusDeployed:
		return planDeployed(obs, matches(latest), policy, failures)
	case status == rcommon.StatusFailed:
		return planFailed(obs, matches(latest), policy, failures)
	default: // uninstalled with history kept, superseded or unknown as the newest record
		return installOrStall(policy, failures)
	}
}

func planDeployed(obs Observation, matches bool, policy Policy, failures Failures) Action {
	if !matches {
		if policy.UpgradeRetryInterval == 0 && exhausted(policy.UpgradeRetries, failures.Upgrade) {
			return ActionStalled
		}
		return ActionUpgrade
	}
	if !policy.TestEnable || !policy.hasTests(obs.Latest) {
		return ActionNone
	}
	if !policy.testsRan(obs.Latest) {
		return ActionTest
	}
	if !TestsFailed(obs.Latest) || policy.IgnoreTestFailures {
		return ActionNone
	}
	// A failed test counts as a failed release of the last action.
	return remediate(obs, policy, failures)
}

func planFailed(obs Observation, matches bool, policy Policy, failures Failures) Action {
	// The spec changed since the failure, or nothing failed: the operation was
	// interrupted and unlocked. Either way the desired state is tried again
	// without remediation: rolling back an interrupted upgrade would roll the
	// workload back and forth, and the uninstall strategy would delete it.
	retry := !matches || Interrupted(obs.Latest)
	if retry && obs.PreviousDeployed != nil && !exhausted(policy.UpgradeRetries, failures.Upgrade) {
		return ActionUpgrade
	}
	// An interrupted first install is completed in place, as Flux does: Helm
	// upgrades a release whose only revision failed, so the objects the
	// install created keep their identity instead of being deleted and
	// created again by the uninstall remediation.
	if Interrupted(obs.Latest) && obs.PreviousDeployed == nil && !exhausted(policy.InstallRetries, failures.Install) {
		return ActionUpgrade
	}
	return remediate(obs, policy, failures)
}

// RetryLater is Run's error when a failed install or upgrade is to be tried
// again after the RetryOnFailure interval instead of remediated.
type RetryLater struct {
	// After is how long until the next attempt.
	After time.Duration
	Err   error
}

func (e *RetryLater) Error() string { return e.Err.Error() }
func (e *RetryLater) Unwrap() error { return e.Err }

// retryWait is how long RetryOnFailure waits before trying the desired state
// again, when the newest revision is a failed attempt at it (the action or
// its tests failed); zero when there is nothing to wait for.
func retryWait(obs Observation, matches func(*release.Release) bool, policy Policy, now time.Time) time.Duration {
	latest := obs.Latest
	interval := policy.retryInterval(obs)
	if interval == 0 || latest == nil || latest.Info == nil || !matches(latest) {
		return 0
	}
	failedAt := latest.Info.LastDeployed
	switch {
	case latest.Info.Status == rcommon.StatusFailed && !Interrupted(latest):
	case latest.Info.Status == rcommon.StatusDeployed && TestsFailed(latest) && !policy.IgnoreTestFailures:
		for _, h := range latest.Hooks {
			if isTestHook(h) && h.LastRun.CompletedAt.After(failedAt) {
				failedAt = h.LastRun.CompletedAt
			}
		}
	default:
		return 0
	}
	return max(0, interval-now.Sub(failedAt))
}

// Interrupted says whether rel was left pending by an interrupted operation
// and then unlocked by the engine, rather than failed by Helm.
func Interrupted(rel *release.Release) bool {
	return rel != nil && rel.Labels[InterruptedLabel] != ""
}

// remediate undoes a failed release when retries remain, or once more after
// the last retry when remediateLastFailure asks for it.
func remediate(obs Observation, policy Policy, failures Failures) Action {
	if policy.retryInterval(obs) > 0 {
		// RetryOnFailure: no remediation, the desired state is tried again
		// (Helm upgrades a release whose newest revision failed).
		return ActionUpgrade
	}
	if obs.PreviousDeployed == nil {
		// A failed install: Helm cannot upgrade a release that never deployed.
		if exhausted(policy.InstallRetries, failures.Install) && !policy.InstallRemediateLast {
			return ActionStalled
		}
		return ActionUninstall
	}
	if exhausted(policy.UpgradeRetries, failures.Upgrade) && !policy.UpgradeRemediateLast {
		return ActionStalled
	}
	if policy.UpgradeStrategyUninstall {
		return ActionUninstall
	}
	return ActionRollback
}

func installOrStall(policy Policy, failures Failures) Action {
	if policy.InstallRetryInterval == 0 && exhausted(policy.InstallRetries, failures.Install) {
		return ActionStalled
	}
	return ActionInstall
}

// exhausted says whether failures used up retries; -1 retries forever.
func exhausted(retries, failures int) bool {
	return retries >= 0 && failures > retries
}

// HasTests says whether the release's chart has test hooks.
func HasTests(rel *release.Release) bool {
	for _, h := range rel.Hooks {
		if isTestHook(h) {
			return true
		}
	}
	return false
}

// TestsRan says whether the test hooks ran on this revision.
func TestsRan(rel *release.Release) bool {
	for _, h := range rel.Hooks {
		if isTestHook(h) && !h.LastRun.StartedAt.IsZero() {
			return true
		}
	}
	return false
}

// TestsFailed says whether a test hook of this revision failed.
func TestsFailed(rel *release.Release) bool {
	for _, h := range rel.Hooks {
		if isTestHook(h) && h.LastRun.Phase == release.HookPhaseFailed {
			return true
		}
	}
	return false
}

func isTestHook(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}
