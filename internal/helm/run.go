package helm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/action"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// maxSteps bounds the actions taken in one Run: a failed upgrade, its rollback
// and the retry fit; anything longer returns to the controller, which requeues.
const maxSteps = 4

// observeRelease reads the release from storage (unless known) and adopts a
// foreign revision. When storage cannot be read it returns obs as it was.
//
// A revision another Helm client wrote from one of the operator's (an
// admin's break-glass helm upgrade or rollback, Flux helm-controller) does
// not verify: it is never replayed (replayable) nor taken for the desired
// state (Desired.Matches), so Plan upgrades the release back to its spec,
// unless adopt finds it deploys exactly that. Helm's deletes during that
// upgrade touch only what the release owns (owningClient), whatever the
// record names.
//
// outside is the newest revision, as read, when it was written outside the
// operator, for the controller to report.
func (e *Engine) observeRelease(ctx context.Context, cfg *action.Configuration, req Request, obs Observation,
	known bool) (observed Observation, outside *Revision, err error) {
	observed, err = observation(cfg, req, obs, known)
	if err != nil {
		return obs, nil, err
	}
	// Before adopt: adopting a revision changes the verdict on it.
	outside = revisionOf(WrittenOutside(observed.Latest), req.Desired)
	// A revision Flux or the helm CLI made carries none of the engine's
	// labels, or copied ones that do not verify; adopted, it matches
	// without a new revision.
	return observed, outside, e.adopt(ctx, cfg, req, observed.Latest)
}

// Run observes the release and takes actions until it is in sync, stalled,
// an action failed without changing storage, or maxSteps actions were taken.
func (e *Engine) Run(ctx context.Context, req Request) (Result, error) {
	res := Result{Failures: req.Failures}
	policy := req.Actions.Policy
	force := req.Force
	// known is an observation made without reading storage: none before a
	// first install the operator's cache vouches for (Helm's install reads
	// storage itself and refuses a name in use), and the release a fresh
	// install returned.
	var obs Observation
	known := req.StorageEmpty
	for range maxSteps {
		logs := &logTail{redactor: req.Redactor}
		cfg, err := e.configWith(req.Target, logs.handler(logr.FromContextOrDiscard(ctx)), req.Pause, req.WaitSuperseded)
		if err != nil {
			return res, err
		}
		uncacheCapabilitiesForCRDs(cfg, req)
		var outside *Revision
		obs, outside, err = e.observeRelease(ctx, cfg, req, obs, known)
		res.Latest = obs.Latest
		if res.WrittenOutside == nil {
			res.WrittenOutside = outside
		}
		if err != nil {
			return res, err
		}
		known = false
		res.Next = planFor(req, obs, policy, res.Failures)
		if force && res.Next == ActionNone {
			res.Next = ActionUpgrade
		}
		if res.Next == ActionNone || res.Next == ActionStalled {
			return res, nil
		}
		if err := retryLater(req, policy, obs, res.Next); err != nil {
			return res, err
		}
		taken, installed := e.take(ctx, cfg, req, obs, res.Next)
		if taken.Err == nil && installed != nil && obs.Latest == nil {
			// A first install: storage holds what Helm returned, nothing else.
			obs, known = Observation{Latest: installed}, true
		}
		force = false
		taken.LogTail = logs.lines()
		taken.Err = req.Redactor.Error(taken.Err)
		res.Taken = append(res.Taken, taken)
		if taken.Err == nil {
			continue
		}
		if stop, err := e.afterFailure(ctx, cfg, req, policy, obs, taken, &res); stop {
			return res, err
		}
	}
	return res, nil
}

// planFor is Plan, except that a release whose chart name changed is
// uninstalled first when the request says so, as Flux does: the new chart's
// objects are then installed anew rather than upgraded from another chart's.
func planFor(req Request, obs Observation, policy Policy, failures Failures) Action {
	if req.ReinstallOnChartNameChange && chartNameChanged(obs.Latest, req.Desired) {
		return ActionUninstall
	}
	return Plan(obs, req.Desired.Matches, policy, failures)
}

// chartNameChanged says whether latest, deployed or failed, was made from a
// chart of another name than the desired one. A pending revision is left to
// the unlock, an uninstalled one to the install.
func chartNameChanged(latest *release.Release, desired Desired) bool {
	if latest == nil || latest.Info == nil || latest.Chart == nil || latest.Chart.Metadata == nil ||
		desired.Chart == nil || desired.Chart.Metadata == nil {
		return false
	}
	status := latest.Info.Status
	return (status == rcommon.StatusDeployed || status == rcommon.StatusFailed) &&
		latest.Chart.Metadata.Name != desired.Chart.Metadata.Name
}

// reinstallDetail says why an uninstall ran when a chart name change caused
// it, so that it does not read as a remediation.
func reinstallDetail(req Request, obs Observation) string {
	if !req.ReinstallOnChartNameChange || !chartNameChanged(obs.Latest, req.Desired) {
		return ""
	}
	return fmt.Sprintf("the chart changed from %s to %s (spec.upgrade.chartNameChangeStrategy Reinstall), so the release is installed anew",
		obs.Latest.Chart.Metadata.Name, req.Desired.Chart.Metadata.Name)
}

// afterFailure looks at storage after a failed action, counts the failure when
// it was a failed release, and says whether the run stops here, with which
// error.
func (e *Engine) afterFailure(ctx context.Context, cfg *action.Configuration, req Request, policy Policy, obs Observation, taken ActionTaken, res *Result) (bool, error) {
	after, err := observe(cfg, req.Target.ReleaseName)
	if err != nil {
		return true, err
	}
	unchanged := sameRevision(obs.Latest, after.Latest)
	if err := interruptedByAPIServer(cfg, taken, obs.Latest, after.Latest, ctx.Err() != nil); err != nil {
		res.Latest = after.Latest
		// taken.Err is redacted already, not what writing the record said.
		return true, req.Redactor.Error(err)
	}
	if errors.Is(taken.Err, ErrWaitSuperseded) {
		// A newer desired state cut the wait short: the revision Helm left
		// failed is marked interrupted, so that the next run takes it to the
		// newer state without remediation, and nothing is counted.
		res.Latest = after.Latest
		if latest := after.Latest; !unchanged && latest != nil && latest.Info != nil && latest.Info.Status == rcommon.StatusFailed {
			if err := markInterrupted(cfg, latest, pendingStatusOf(taken.Action)); err != nil {
				return true, fmt.Errorf("marking release %s revision %d as superseded: %w", latest.Name, latest.Version, err)
			}
		}
		return true, taken.Err
	}
	if !unchanged || taken.Action == ActionTest {
		// A failed release counts against the retries. A failed test is
		// one too: Helm records it on the revision's hooks, which leaves its
		// version and status as they were.
		res.Failures = countFailure(res.Failures, taken.Action, obs)
	}
	var unjudgeable *rollout.HealthCheckError
	if errors.As(taken.Err, &unjudgeable) {
		// A health check expression cannot judge an object of the release:
		// neither remediation nor a retry helps until the expression
		// changes, which the caller reports.
		res.Latest = after.Latest
		return true, taken.Err
	}
	if unchanged {
		// Otherwise nothing changed in storage (denied, invalid chart, the API
		// server unreachable…): not a failed release, so not counted, as in
		// Flux; retrying now would fail the same way, so the controller
		// backs off.
		res.Latest = after.Latest
		return true, taken.Err
	}
	if wait := retryWait(after, req.Desired.Matches, policy, time.Now()); wait > 0 {
		res.Latest = after.Latest
		return true, &RetryLater{After: wait, Err: taken.Err}
	}
	return false, nil
}

// uncacheCapabilitiesForCRDs leaves the capabilities of a chart with CRDs to
// Helm, which finds them after installing the CRDs: the chart's templates may
// ask for the kinds those define.
func uncacheCapabilitiesForCRDs(cfg *action.Configuration, req Request) {
	if req.Desired.Chart != nil && len(req.Desired.Chart.CRDObjects()) > 0 {
		cfg.Capabilities = nil
	}
}

// observation is obs when it is known, otherwise what storage holds.
func observation(cfg *action.Configuration, req Request, obs Observation, known bool) (Observation, error) {
	if known {
		return obs, nil
	}
	return observe(cfg, req.Target.ReleaseName)
}

// retryLater is the RetryOnFailure wait before next, if one applies.
func retryLater(req Request, policy Policy, obs Observation, next Action) error {
	wait := retryWait(obs, req.Desired.Matches, policy, time.Now())
	if wait <= 0 {
		return nil
	}
	// The failed revision's description may quote what the API server
	// rejected, Secret values included.
	return &RetryLater{After: wait, Err: req.Redactor.Error(fmt.Errorf("%s of release %s/%s is retried in %s (strategy RetryOnFailure): %s",
		next, req.Target.StorageNamespace, req.Target.ReleaseName, wait.Round(time.Second), failureOf(obs.Latest)))}
}

// take takes the planned action. An unlock becomes a resume when the
// interrupted action can be finished by waiting (resumable), and is an unlock
// again when the action had not applied its objects.
func (e *Engine) take(ctx context.Context, cfg *action.Configuration, req Request, obs Observation, next Action) (ActionTaken, *release.Release) {
	if next == ActionUnlock {
		if how, ok := resumable(req, obs); ok {
			if req.BeforeAction != nil {
				req.BeforeAction(ctx, ActionResume)
			}
			if taken := e.resumeAction(ctx, cfg, req, obs, how); !errors.Is(taken.Err, errNotApplied) {
				return taken, nil
			}
		}
	}
	if req.BeforeAction != nil {
		req.BeforeAction(ctx, next)
	}
	return e.act(ctx, cfg, req, obs, next)
}

// resumeAction finishes an interrupted install or upgrade (resume).
func (e *Engine) resumeAction(ctx context.Context, cfg *action.Configuration, req Request, obs Observation, how resumption) ActionTaken {
	start := time.Now()
	detail, err := e.resume(ctx, cfg, req.Target, obs, how)
	if err != nil {
		err = fmt.Errorf("%s of release %s/%s failed: %w", how.action, req.Target.StorageNamespace, req.Target.ReleaseName, err)
	}
	return ActionTaken{Action: how.action, Err: err, Duration: time.Since(start), Detail: detail}
}

// act runs one action; an install returns the release it made.
func (e *Engine) act(ctx context.Context, cfg *action.Configuration, req Request, obs Observation, next Action) (ActionTaken, *release.Release) {
	start := time.Now()
	labels := req.Desired.labels()
	var detail string
	var reinstall bool
	var installed *release.Release
	var err error
	switch next {
	case ActionInstall:
		installed, err = e.install(ctx, cfg, req, obs, labels)
	case ActionUpgrade:
		err = e.upgrade(ctx, cfg, req, obs, labels)
	case ActionTest:
		if err = refuseUnverified(obs.Latest, "testing"); err == nil {
			err = runTests(cfg, req)
		}
	case ActionRollback:
		if err = refuseUnverified(obs.PreviousDeployed, "rolling back to"); err == nil {
			err = newRollback(cfg, req.Actions, req.Apply, obs.PreviousDeployed).Run(req.Target.ReleaseName)
		}
	case ActionUninstall:
		uninstall := newUninstall(cfg, req.Actions)
		uninstall.DisableHooks = uninstall.DisableHooks || !replayable(obs.Latest)
		_, err = uninstall.Run(req.Target.ReleaseName)
		detail = reinstallDetail(req, obs)
		reinstall = detail != ""
	case ActionUnlock:
		detail, err = unlock(cfg, obs.Latest)
	default:
		err = fmt.Errorf("unknown action %q", next)
	}
	if err != nil {
		err = fmt.Errorf("%s of release %s/%s failed: %w", next, req.Target.StorageNamespace, req.Target.ReleaseName, err)
	}
	if err != nil || installed == nil || installed.Info == nil || installed.Info.Status != rcommon.StatusDeployed {
		installed = nil
	}
	return ActionTaken{Action: next, Err: err, Duration: time.Since(start), Detail: detail, Reinstall: reinstall}, installed
}

// unlock marks a release left pending by an interrupted operation as failed:
// nothing is running it any more (the operator holds the only lease), and a
// failed release can be acted on, while a pending one blocks every operation
// with "another operation is in progress". InterruptedLabel tells Plan that
// nothing failed, so the operation is retried rather than remediated. unlock
// returns what it found, for the user.
func unlock(cfg *action.Configuration, rel *release.Release) (string, error) {
	previous := rel.Info.Status
	rel.SetStatus(rcommon.StatusFailed, fmt.Sprintf("Release was %s when the operation running it was interrupted", previous))
	if err := markInterrupted(cfg, rel, previous); err != nil {
		return "", fmt.Errorf("marking release %s revision %d as failed: %w", rel.Name, rel.Version, err)
	}
	return fmt.Sprintf("revision %d was left %s by an interrupted operation (the operator stopped before Helm finished) and is marked failed",
		rel.Version, previous), nil
}

// markInterrupted labels rel, a failed revision, with the status its
// operation was in when something other than the release stopped it, and
// writes it: Plan then completes the operation instead of remediating it,
// and no failure is counted.
func markInterrupted(cfg *action.Configuration, rel *release.Release, was rcommon.Status) error {
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	rel.Labels[InterruptedLabel] = was.String()
	return cfg.Releases.Update(rel)
}

// pendingStatusOf is the status a revision is in while action waits.
func pendingStatusOf(action Action) rcommon.Status {
	switch action {
	case ActionInstall:
		return rcommon.StatusPendingInstall
	case ActionRollback:
		return rcommon.StatusPendingRollback
	}
	return rcommon.StatusPendingUpgrade
}

// countFailure counts a failed install or upgrade. A failed test counts
// against the action that made the tested revision, and an upgrade of a
// release that never deployed (completing an interrupted install) as an
// install.
func countFailure(f Failures, failed Action, obs Observation) Failures {
	neverDeployed := obs.PreviousDeployed == nil && (obs.Latest == nil || obs.Latest.Info == nil ||
		obs.Latest.Info.Status != rcommon.StatusDeployed)
	switch {
	case failed == ActionInstall, failed == ActionTest && obs.PreviousDeployed == nil, failed == ActionUpgrade && neverDeployed:
		f.Install++
	case failed == ActionUpgrade, failed == ActionTest:
		f.Upgrade++
	}
	return f
}

func sameRevision(a, b *release.Release) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Version == b.Version && a.Info.Status == b.Info.Status
}
