package helm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"helm.sh/helm/v4/pkg/action"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// apiServerUnavailable says whether err is the API server (or the way to it)
// failing to serve a request, rather than refusing what was asked: overloaded
// (429, 503, "Timeout: request did not complete within requested timeout"),
// restarting, or the connection dropped. None of it says anything about the
// chart or its values, and the same request succeeds later.
//
// Helm's own wait running out is not one of these: it is the release's
// rollout that did not finish in spec.timeout, a failure of the release.
// Neither are errors the API server answers with on purpose (invalid, denied,
// conflict, an admission webhook's refusal).
func apiServerUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The action's own time ran out (spec.timeout), or the operator
		// is stopping: context's errors are net.Errors that time out too.
		return false
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// APIServerInterruptedError is Run's error when the API server failed to serve
// an install or upgrade part-way (apiServerUnavailable): Helm marked the
// revision failed, but nothing about the release failed. The engine marks
// the revision interrupted, so the next attempt completes it in place, as
// after a crash, and does not count it: with Flux's default of no retries,
// counting it would stall a release because the cluster was busy, which a
// thousand releases applied at once made happen.
type APIServerInterruptedError struct {
	Action   Action
	Revision int
	Err      error
	// Stopped: the operator stopped, not the API server (the run's context
	// was cancelled once the Helm runs' grace period was over).
	Stopped bool
}

func (e *APIServerInterruptedError) Error() string {
	if e.Stopped {
		return fmt.Sprintf("the operator stopped part-way through revision %d's %s, after the Helm runs' grace period: the revision is left pending for the next leader, not counted as a retry: %v",
			e.Revision, e.Action, e.Err)
	}
	return fmt.Sprintf("the API server did not serve the %s part-way through revision %d; the next attempt, with back-off, is not counted as a retry: %v",
		e.Action, e.Revision, e.Err)
}

func (e *APIServerInterruptedError) Unwrap() error { return e.Err }

// interruptedByAPIServer marks latest, the revision a failed install or
// upgrade left, as interrupted when the API server caused the failure, or
// the run's context ended (stopped: the operator stopped and the runs' grace
// period is over), and returns the error Run stops with; nil when that is
// not what happened.
func interruptedByAPIServer(cfg *action.Configuration, taken ActionTaken, before, latest *release.Release, stopped bool) error {
	cut := apiServerUnavailable(taken.Err) || (stopped && errors.Is(taken.Err, context.Canceled))
	if (taken.Action != ActionInstall && taken.Action != ActionUpgrade) || !cut ||
		latest == nil || latest.Info == nil || latest.Info.Status != rcommon.StatusFailed ||
		(before != nil && latest.Version <= before.Version) {
		return nil
	}
	pending := rcommon.StatusPendingUpgrade
	if taken.Action == ActionInstall {
		pending = rcommon.StatusPendingInstall
	}
	err := taken.Err
	if stopped {
		// Left as a crash leaves it: pending, as Helm wrote it before the
		// cancelled context made it failed. The next leader then resumes
		// the wait when every object was applied and unlocks the revision
		// otherwise, with no failure counted either way.
		if updateErr := restorePending(cfg, latest, pending); updateErr != nil {
			err = errors.Join(err, fmt.Errorf("leaving revision %d pending: %w", latest.Version, updateErr))
		}
		return &APIServerInterruptedError{Action: taken.Action, Revision: latest.Version, Err: err, Stopped: true}
	}
	if updateErr := markInterrupted(cfg, latest, pending); updateErr != nil {
		// Still not counted; unmarked, the next attempt remediates the
		// failed revision as after any failure, which at worst reinstalls.
		err = errors.Join(err, fmt.Errorf("marking revision %d interrupted: %w", latest.Version, updateErr))
	}
	return &APIServerInterruptedError{Action: taken.Action, Revision: latest.Version, Err: err}
}

// restorePending writes rel back with the pending status and description
// Helm gave it when its action began.
func restorePending(cfg *action.Configuration, rel *release.Release, pending rcommon.Status) error {
	rel.Info.Status = pending
	rel.Info.Description = "Initial install underway"
	if pending == rcommon.StatusPendingUpgrade {
		rel.Info.Description = "Preparing upgrade"
	}
	return cfg.Releases.Update(rel)
}
