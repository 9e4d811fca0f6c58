package helmrelease

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// waitOf is how the actions of a release with spec wait, given the
// UseHelm3Defaults gate d: spec.waitStrategy (poller unless the gate says
// legacy) and, under the poller only, spec.healthCheckExprs, as in Flux v1.6.
// Whether an action waits at all is its own disableWait.
func waitOf(d defaults.Defaults, spec *kraanv1.HelmReleaseSpec) (helm.WaitStrategy, []rollout.HealthCheckExpr) {
	if d.WaitStrategy(spec) != kraanv1.WaitStrategyPoller {
		return helm.WaitLegacy, nil
	}
	return helm.WaitPoller, healthCheckExprsOf(d.HealthCheckExprs(spec))
}

// healthCheckExprsOf are the spec's health checks as the tracker takes them.
func healthCheckExprsOf(checks []kraanv1.CustomHealthCheck) []rollout.HealthCheckExpr {
	if len(checks) == 0 {
		return nil
	}
	out := make([]rollout.HealthCheckExpr, len(checks))
	for i, c := range checks {
		out[i] = rollout.HealthCheckExpr{APIVersion: c.APIVersion, Kind: c.Kind,
			Current: c.Current, InProgress: c.InProgress, Failed: c.Failed}
	}
	return out
}

// reconcileHealthChecks refuses, before any Helm action, health check
// expressions that do not compile: an install would otherwise apply the
// chart and fail at its wait, and remediation would retry it for nothing. It
// stalls until the spec changes. The message names the field and CEL's
// error, which quotes the expression, never an object.
func (r *Reconciler) reconcileHealthChecks(_ context.Context, sc *releaseScope) (ctrl.Result, error) {
	_, exprs := waitOf(r.HelmDefaults, &sc.hr.Spec)
	if err := rollout.ValidateHealthCheckExprs(exprs); err != nil {
		err = outcome.Terminal(kraanv1.ReasonInvalidCELExpression, fmt.Errorf("spec.%w", err))
		r.Events.Warning(sc.hr, kraanv1.ReasonInvalidCELExpression, err.Error())
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}
