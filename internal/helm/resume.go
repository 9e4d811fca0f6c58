package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// errNotApplied: the interrupted action had not applied every object, so
// the revision is unlocked and the action tried again instead.
var errNotApplied = errors.New("the revision's objects were not all applied")

// resumption is how an interrupted install or upgrade is finished.
type resumption struct {
	action  Action
	timeout time.Duration
	jobs    bool
}

// resumable says whether the pending newest revision can be finished by
// waiting for its objects, as the interrupted action would have: the engine
// made it from the desired state, by an install or upgrade that waits, and no
// post hook is left to run (the engine does not run Helm's hooks itself) nor
// objects to clean up on failure (that needs the list of what the upgrade
// created). Any other pending revision is unlocked and the action tried again.
func resumable(req Request, obs Observation) (resumption, bool) {
	rel := obs.Latest
	if rel == nil || rel.Info == nil || !req.Desired.Matches(rel) || rel.Labels[InterruptedLabel] != "" {
		return resumption{}, false
	}
	var (
		wait, jobs, hooks bool
		timeout           time.Duration
		hook              release.HookEvent
		act               Action
	)
	switch rel.Info.Status {
	case rcommon.StatusPendingInstall:
		a := newInstall(&action.Configuration{}, req.Target, req.Actions, req.Apply, map[string]string{})
		wait, jobs, hooks, timeout, hook, act = a.WaitStrategy != kube.HookOnlyStrategy, a.WaitForJobs, !a.DisableHooks, a.Timeout, release.HookPostInstall, ActionInstall
	case rcommon.StatusPendingUpgrade:
		a := newUpgrade(&action.Configuration{}, req.Target, req.Actions, req.Apply, obs.PreviousDeployed, map[string]string{})
		if a.CleanupOnFail {
			return resumption{}, false
		}
		wait, jobs, hooks, timeout, hook, act = a.WaitStrategy != kube.HookOnlyStrategy, a.WaitForJobs, !a.DisableHooks, a.Timeout, release.HookPostUpgrade, ActionUpgrade
	default:
		return resumption{}, false
	}
	if !wait {
		return resumption{}, false
	}
	if hooks && slices.ContainsFunc(rel.Hooks, func(h *release.Hook) bool { return slices.Contains(h.Events, hook) }) {
		return resumption{}, false
	}
	return resumption{action: act, timeout: timeout, jobs: jobs}, true
}

// resume waits for the objects of the pending newest revision until the
// deadline its action had (its start plus the timeout), then records the
// outcome as Helm would have: deployed, the previous deployed revision
// superseded, or failed with Helm's description.
func (e *Engine) resume(ctx context.Context, cfg *action.Configuration, target Target, obs Observation, how resumption) (string, error) {
	rel := obs.Latest
	resources, err := e.appliedObjects(ctx, cfg, target, rel)
	if err != nil {
		return "", err
	}
	left := max(time.Until(rel.Info.LastDeployed.Add(how.timeout)), 0)
	waiter, err := cfg.KubeClient.GetWaiter(waitStrategyOf(true))
	if err != nil {
		return "", err
	}
	if how.jobs {
		err = waiter.WaitWithJobs(resources, left)
	} else {
		err = waiter.Wait(resources, left)
	}
	detail := fmt.Sprintf("resumed the wait for revision %d, which the operator was waiting for when it stopped", rel.Version)
	if err != nil {
		msg := fmt.Sprintf("Release %q failed: %s", rel.Name, err)
		if how.action == ActionUpgrade {
			msg = fmt.Sprintf("Upgrade %q failed: %s", rel.Name, err)
		}
		rel.SetStatus(rcommon.StatusFailed, msg)
		if uerr := cfg.Releases.Update(rel); uerr != nil {
			return detail, fmt.Errorf("recording revision %d as failed: %w", rel.Version, uerr)
		}
		return detail, fmt.Errorf("%s (%s)", msg, detail)
	}
	if prev := obs.PreviousDeployed; how.action == ActionUpgrade && prev != nil && prev.Info.Status == rcommon.StatusDeployed {
		prev.Info.Status = rcommon.StatusSuperseded
		if err := cfg.Releases.Update(prev); err != nil {
			return detail, fmt.Errorf("marking revision %d superseded: %w", prev.Version, err)
		}
	}
	desc := "Install complete"
	if how.action == ActionUpgrade {
		desc = "Upgrade complete"
	}
	rel.SetStatus(rcommon.StatusDeployed, desc)
	if err := cfg.Releases.Update(rel); err != nil {
		return detail, fmt.Errorf("recording revision %d as deployed: %w", rel.Version, err)
	}
	return detail, nil
}

// appliedObjects are the objects of rel, when the interrupted action applied
// every one of them; otherwise errNotApplied.
func (e *Engine) appliedObjects(ctx context.Context, cfg *action.Configuration, target Target, rel *release.Release) (kube.ResourceList, error) {
	resources, err := cfg.KubeClient.Build(bytes.NewBufferString(rel.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("reading the objects of revision %d: %w", rel.Version, err)
	}
	for _, info := range resources {
		if err := info.Get(); apierrors.IsNotFound(err) {
			// Interrupted before all was applied: nothing to wait for.
			return nil, errNotApplied
		}
	}
	// An upgrade's objects exist before it applies them (the previous
	// revision's): waiting for them would record as deployed what was
	// never applied, as the soak found. Only objects that already are
	// what the revision says are waited for.
	if applied, err := e.appliedAsRecorded(ctx, target, rel); err != nil || !applied {
		return nil, errors.Join(errNotApplied, err)
	}
	return resources, nil
}

// appliedAsRecorded says whether every object of rel's manifest is in the
// cluster as the manifest says: a server-side dry-run apply of each (the
// drift check's comparison, so defaults and other managers' fields do not
// count) changes nothing.
func (e *Engine) appliedAsRecorded(ctx context.Context, target Target, rel *release.Release) (bool, error) {
	_, diffs, err := e.compareManifest(ctx, target, rel.Manifest)
	if err != nil {
		return false, fmt.Errorf("comparing revision %d with the cluster: %w", rel.Version, err)
	}
	for _, d := range diffs {
		if d.Type == jsondiff.DiffTypeCreate || d.Type == jsondiff.DiffTypeUpdate {
			return false, nil
		}
	}
	return true, nil
}
