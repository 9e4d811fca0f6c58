package helmrelease

import (
	"context"
	"time"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// periodicRequeue is how long an in-sync release waits for its next look:
// requeueInterval raised to the operator's minimum (--min-reconcile-interval).
func (r *Reconciler) periodicRequeue(ctx context.Context, hr *kraanv1.HelmRelease) time.Duration {
	return r.floor.Apply(ctx, hr, "spec.interval", requeueInterval(hr))
}

// withRetryFloor raises the RetryOnFailure intervals of the install and
// upgrade strategies of spec, a copy the Helm run is given, to the
// operator's minimum: a failed action is otherwise tried again as soon as
// its interval has passed, within the same run when it is shorter than the
// action. An unset interval keeps its default (5m).
func (r *Reconciler) withRetryFloor(ctx context.Context, hr *kraanv1.HelmRelease, spec *kraanv1.HelmReleaseSpec) *kraanv1.HelmReleaseSpec {
	if spec.Install != nil {
		r.floorRetry(ctx, hr, "spec.install.strategy.retryInterval", spec.Install.Strategy)
	}
	if spec.Upgrade != nil {
		r.floorRetry(ctx, hr, "spec.upgrade.strategy.retryInterval", spec.Upgrade.Strategy)
	}
	return spec
}

func (r *Reconciler) floorRetry(ctx context.Context, hr *kraanv1.HelmRelease, field string, s *kraanv1.ActionStrategy) {
	if s == nil || s.RetryInterval == nil {
		return
	}
	s.RetryInterval.Duration = r.floor.Apply(ctx, hr, field, s.RetryInterval.Duration)
}
