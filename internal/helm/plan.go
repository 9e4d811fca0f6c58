package helm

import (
	"helm.sh/helm/v3/pkg/release"
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
	case status == release.StatusDeployed:
		return planDeployed(obs, matches(latest), policy, failures)
	case status == release.StatusFailed:
		return planFailed(obs, matches(latest), policy, failures)
	default: // uninstalled with history kept, superseded or unknown as the newest record
		return installOrStall(policy, failures)
	}
}

func planDeployed(obs Observation, matches bool, policy Policy, failures Failures) Action {
	if !matches {
		if exhausted(policy.UpgradeRetries, failures.Upgrade) {
			return ActionStalled
		}
		return ActionUpgrade
	}
	if !policy.TestEnable || !HasTests(obs.Latest) {
		return ActionNone
	}
	if !TestsRan(obs.Latest) {
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

// Interrupted says whether rel was left pending by an interrupted operation
// and then unlocked by the engine, rather than failed by Helm.
func Interrupted(rel *release.Release) bool {
	return rel != nil && rel.Labels[InterruptedLabel] != ""
}

// remediate undoes a failed release when retries remain, or once more after
// the last retry when remediateLastFailure asks for it.
func remediate(obs Observation, policy Policy, failures Failures) Action {
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
	if exhausted(policy.InstallRetries, failures.Install) {
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
