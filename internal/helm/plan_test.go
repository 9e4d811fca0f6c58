package helm

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
)

func rel(version int, status rcommon.Status, hooks ...*release.Hook) *release.Release {
	return &release.Release{Version: version, Info: &release.Info{Status: status}, Hooks: hooks}
}

// interrupted marks r as unlocked after an interrupted operation left it in status.
func interrupted(r *release.Release, status rcommon.Status) *release.Release {
	r.Labels = map[string]string{InterruptedLabel: status.String()}
	return r
}

func testHook(phase release.HookPhase) *release.Hook {
	h := &release.Hook{Events: []release.HookEvent{release.HookTest}}
	if phase != "" {
		h.LastRun = release.HookExecution{StartedAt: time.Now(), Phase: phase}
	}
	return h
}

func namedTestHook(name string, phase release.HookPhase) *release.Hook {
	h := testHook(phase)
	h.Name = name
	return h
}

func TestTestSelected(t *testing.T) {
	g := NewWithT(t)
	exclude := TestOptions{Filters: []TestFilter{{Name: "slow", Exclude: true}}}
	g.Expect(exclude.Selected("slow")).To(BeFalse())
	g.Expect(exclude.Selected("smoke")).To(BeTrue())
	include := TestOptions{Filters: []TestFilter{{Name: "smoke"}, {Name: "slow", Exclude: true}}}
	g.Expect(include.Selected("smoke")).To(BeTrue())
	g.Expect(include.Selected("other")).To(BeFalse())
}

func TestPlan(t *testing.T) {
	upgradeRetries := Policy{UpgradeRetries: 2, UpgradeRemediateLast: true}
	retryInstall := Policy{InstallRetryInterval: time.Minute}
	retryUpgrade := Policy{UpgradeRetryInterval: time.Minute}
	cases := []struct {
		name     string
		obs      Observation
		matches  bool
		policy   Policy
		failures Failures
		want     Action
	}{
		{"absent installs", Observation{}, false, Policy{}, Failures{}, ActionInstall},
		{"absent after exhausted installs stalls", Observation{}, false, Policy{}, Failures{Install: 1}, ActionStalled},
		{"unlimited install retries never stall", Observation{}, false, Policy{InstallRetries: -1}, Failures{Install: 99}, ActionInstall},
		{"pending-install unlocks", Observation{Latest: rel(1, rcommon.StatusPendingInstall)}, true, Policy{}, Failures{}, ActionUnlock},
		{"pending-upgrade unlocks", Observation{Latest: rel(2, rcommon.StatusPendingUpgrade)}, true, Policy{}, Failures{}, ActionUnlock},
		{"deployed in sync does nothing", Observation{Latest: rel(1, rcommon.StatusDeployed)}, true, Policy{}, Failures{}, ActionNone},
		{"deployed out of sync upgrades", Observation{Latest: rel(1, rcommon.StatusDeployed)}, false, Policy{}, Failures{}, ActionUpgrade},
		{"deployed out of sync after exhausted upgrades stalls", Observation{Latest: rel(3, rcommon.StatusDeployed)}, false, upgradeRetries, Failures{Upgrade: 3}, ActionStalled},
		{"tests enabled and not run tests", Observation{Latest: rel(1, rcommon.StatusDeployed, testHook(""))}, true, Policy{TestEnable: true}, Failures{}, ActionTest},
		{"tests enabled without test hooks does nothing", Observation{Latest: rel(1, rcommon.StatusDeployed)}, true, Policy{TestEnable: true}, Failures{}, ActionNone},
		{"tests passed does nothing", Observation{Latest: rel(1, rcommon.StatusDeployed, testHook(release.HookPhaseSucceeded))}, true, Policy{TestEnable: true}, Failures{}, ActionNone},
		{"failed test ignored does nothing", Observation{Latest: rel(1, rcommon.StatusDeployed, testHook(release.HookPhaseFailed))}, true, Policy{TestEnable: true, IgnoreTestFailures: true}, Failures{Install: 1}, ActionNone},
		{"failed test after upgrade rolls back", Observation{Latest: rel(2, rcommon.StatusDeployed, testHook(release.HookPhaseFailed)), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, true, Policy{TestEnable: true, UpgradeRetries: 1}, Failures{Upgrade: 1}, ActionRollback},
		{"failed install uninstalls while retries remain", Observation{Latest: rel(1, rcommon.StatusFailed)}, true, Policy{InstallRetries: 2}, Failures{Install: 1}, ActionUninstall},
		{"failed install exhausted stalls", Observation{Latest: rel(1, rcommon.StatusFailed)}, true, Policy{InstallRetries: 1}, Failures{Install: 2}, ActionStalled},
		{"failed install exhausted remediates last failure", Observation{Latest: rel(1, rcommon.StatusFailed)}, true, Policy{InstallRetries: 1, InstallRemediateLast: true}, Failures{Install: 2}, ActionUninstall},
		{"failed upgrade rolls back", Observation{Latest: rel(2, rcommon.StatusFailed), PreviousDeployed: rel(1, rcommon.StatusDeployed)}, true, upgradeRetries, Failures{Upgrade: 1}, ActionRollback},
		{"failed upgrade with uninstall strategy uninstalls", Observation{Latest: rel(2, rcommon.StatusFailed), PreviousDeployed: rel(1, rcommon.StatusDeployed)}, true, Policy{UpgradeRetries: 1, UpgradeStrategyUninstall: true}, Failures{Upgrade: 1}, ActionUninstall},
		{"failed upgrade exhausted without remediate-last stalls", Observation{Latest: rel(2, rcommon.StatusFailed), PreviousDeployed: rel(1, rcommon.StatusDeployed)}, true, Policy{}, Failures{Upgrade: 1}, ActionStalled},
		{"failed upgrade then spec change upgrades", Observation{Latest: rel(2, rcommon.StatusFailed), PreviousDeployed: rel(1, rcommon.StatusDeployed)}, false, Policy{}, Failures{}, ActionUpgrade},
		{"failed install then spec change uninstalls first", Observation{Latest: rel(1, rcommon.StatusFailed)}, false, Policy{}, Failures{}, ActionUninstall},
		{"interrupted upgrade is retried, not rolled back", Observation{Latest: interrupted(rel(2, rcommon.StatusFailed), rcommon.StatusPendingUpgrade), PreviousDeployed: rel(1, rcommon.StatusDeployed)}, true, Policy{}, Failures{}, ActionUpgrade},
		{"interrupted upgrade with uninstall strategy is retried, not uninstalled", Observation{Latest: interrupted(rel(2, rcommon.StatusFailed), rcommon.StatusPendingUpgrade), PreviousDeployed: rel(1, rcommon.StatusDeployed)}, true, Policy{UpgradeRetries: 1, UpgradeStrategyUninstall: true}, Failures{}, ActionUpgrade},
		{"interrupted retry after exhausted upgrades is remediated", Observation{Latest: interrupted(rel(3, rcommon.StatusFailed), rcommon.StatusPendingUpgrade), PreviousDeployed: rel(1, rcommon.StatusDeployed)}, true, upgradeRetries, Failures{Upgrade: 3}, ActionRollback},
		{"interrupted rollback upgrades", Observation{Latest: interrupted(rel(3, rcommon.StatusFailed), rcommon.StatusPendingRollback), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, false, Policy{}, Failures{}, ActionUpgrade},
		{"interrupted install is completed in place", Observation{Latest: interrupted(rel(1, rcommon.StatusFailed), rcommon.StatusPendingInstall)}, true, Policy{}, Failures{}, ActionUpgrade},
		{"interrupted install after exhausted install retries is remediated", Observation{Latest: interrupted(rel(1, rcommon.StatusFailed), rcommon.StatusPendingInstall)}, true, Policy{InstallRetries: 1}, Failures{Install: 2}, ActionStalled},
		{"interrupted install after exhausted retries with remediateLastFailure is uninstalled", Observation{Latest: interrupted(rel(1, rcommon.StatusFailed), rcommon.StatusPendingInstall)}, true, Policy{InstallRetries: 1, InstallRemediateLast: true}, Failures{Install: 2}, ActionUninstall},
		{"uninstalled with history reinstalls", Observation{Latest: rel(3, rcommon.StatusUninstalled)}, false, Policy{}, Failures{}, ActionInstall},
		{"excluded tests do not count as not run", Observation{Latest: rel(1, rcommon.StatusDeployed, namedTestHook("smoke", ""))}, true, Policy{TestEnable: true, TestSelected: func(n string) bool { return n != "smoke" }}, Failures{}, ActionNone},
		{"selected tests not run run", Observation{Latest: rel(1, rcommon.StatusDeployed, namedTestHook("smoke", ""), namedTestHook("load", ""))}, true, Policy{TestEnable: true, TestSelected: func(n string) bool { return n != "smoke" }}, Failures{}, ActionTest},
		// RetryOnFailure: no remediation and no limit.
		{"retry: failed install is upgraded in place, not uninstalled", Observation{Latest: rel(1, rcommon.StatusFailed)}, true, retryInstall, Failures{Install: 9}, ActionUpgrade},
		{"retry: failed upgrade is upgraded again, not rolled back", Observation{Latest: rel(2, rcommon.StatusFailed), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, true, retryUpgrade, Failures{Upgrade: 9}, ActionUpgrade},
		{"retry: install strategy does not cover upgrades", Observation{Latest: rel(2, rcommon.StatusFailed), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, true, retryInstall, Failures{Upgrade: 1}, ActionStalled},
		{"retry: out of sync never stalls", Observation{Latest: rel(3, rcommon.StatusDeployed)}, false, retryUpgrade, Failures{Upgrade: 9}, ActionUpgrade},
		{"retry: failed test after upgrade upgrades again", Observation{Latest: rel(2, rcommon.StatusDeployed, testHook(release.HookPhaseFailed)), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, true, Policy{TestEnable: true, UpgradeRetryInterval: time.Minute}, Failures{Upgrade: 1}, ActionUpgrade},
		{"retry: absent installs after any failures", Observation{}, false, retryInstall, Failures{Install: 9}, ActionInstall},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.obs, func(*release.Release) bool { return tc.matches }, tc.policy, tc.failures)
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

func TestRetryWait(t *testing.T) {
	now := time.Now()
	failedAt := func(r *release.Release, at time.Time) *release.Release {
		r.Info.LastDeployed = at
		return r
	}
	retry := Policy{InstallRetryInterval: 5 * time.Minute, UpgradeRetryInterval: time.Minute}
	for _, tt := range []struct {
		name    string
		obs     Observation
		matches bool
		policy  Policy
		want    time.Duration
	}{
		{"failed install waits the install interval", Observation{Latest: failedAt(rel(1, rcommon.StatusFailed), now.Add(-time.Minute))}, true, retry, 4 * time.Minute},
		{"failed upgrade waits the upgrade interval", Observation{Latest: failedAt(rel(2, rcommon.StatusFailed), now.Add(-20*time.Second)), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, true, retry, 40 * time.Second},
		{"interval passed: no wait", Observation{Latest: failedAt(rel(2, rcommon.StatusFailed), now.Add(-time.Hour)), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, true, retry, 0},
		{"a spec change goes at once", Observation{Latest: failedAt(rel(2, rcommon.StatusFailed), now), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, false, retry, 0},
		{"an interrupted operation goes at once", Observation{Latest: interrupted(failedAt(rel(2, rcommon.StatusFailed), now), rcommon.StatusPendingUpgrade), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, true, retry, 0},
		{"RemediateOnFailure never waits", Observation{Latest: failedAt(rel(1, rcommon.StatusFailed), now)}, true, Policy{}, 0},
		{"deployed without failed tests: no wait", Observation{Latest: failedAt(rel(1, rcommon.StatusDeployed), now)}, true, retry, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := retryWait(tt.obs, func(*release.Release) bool { return tt.matches }, tt.policy, now)
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

func TestValuesDigest_IgnoresMapOrder(t *testing.T) {
	g := NewWithT(t)
	a := map[string]any{"a": 1, "b": map[string]any{"x": "y", "z": true}}
	b := map[string]any{"b": map[string]any{"z": true, "x": "y"}, "a": 1}
	g.Expect(ValuesDigest(a)).To(Equal(ValuesDigest(b)))
	g.Expect(ValuesDigest(a)).NotTo(Equal(ValuesDigest(map[string]any{"a": 2})))
	g.Expect(ValuesDigest(nil)).To(Equal(ValuesDigest(map[string]any{})))
}

func TestCountFailure(t *testing.T) {
	deployed, failedInstall := rel(1, rcommon.StatusDeployed), rel(1, rcommon.StatusFailed)
	for _, tt := range []struct {
		name   string
		failed Action
		obs    Observation
		want   Failures
	}{
		{"install", ActionInstall, Observation{}, Failures{Install: 1}},
		{"upgrade of a deployed release", ActionUpgrade, Observation{Latest: deployed}, Failures{Upgrade: 1}},
		{"upgrade completing an interrupted install counts as an install", ActionUpgrade,
			Observation{Latest: interrupted(failedInstall, rcommon.StatusPendingInstall)}, Failures{Install: 1}},
		{"upgrade after a failed upgrade", ActionUpgrade,
			Observation{Latest: rel(2, rcommon.StatusFailed), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, Failures{Upgrade: 1}},
		{"test of an install", ActionTest, Observation{Latest: deployed}, Failures{Install: 1}},
		{"test of an upgrade", ActionTest, Observation{Latest: rel(2, rcommon.StatusDeployed), PreviousDeployed: rel(1, rcommon.StatusSuperseded)}, Failures{Upgrade: 1}},
		{"test of a first revision never deployed", ActionTest, Observation{Latest: failedInstall}, Failures{Install: 1}},
		{"rollback counts nothing", ActionRollback, Observation{Latest: deployed}, Failures{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(countFailure(Failures{}, tt.failed, tt.obs)).To(Equal(tt.want))
		})
	}
}
