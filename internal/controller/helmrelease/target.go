package helmrelease

import (
	"context"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// Flux's request annotations, so `flux reconcile hr [--force|--reset]`
// habits work. requestedAt asks for a reconcile now. forceAt and resetAt are
// tokens that act only when equal to requestedAt, once each: forceAt upgrades
// a release that is in sync, resetAt resets the failure counters (clearing
// Stalled after exhausted retries).
const (
	requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"
	forceAtAnnotation     = "reconcile.fluxcd.io/forceAt"
	resetAtAnnotation     = "reconcile.fluxcd.io/resetAt"
)

// handleRequest says whether the annotation asks for its action now: set,
// equal to requestedAt and not handled before. Like Flux, it records the
// value as handled whether or not it acts, so a token acts at most once.
func handleRequest(hr *kraanv1.HelmRelease, annotation string, lastHandled *string) bool {
	value, ok := hr.Annotations[annotation]
	if !ok {
		return false
	}
	act := value == hr.Annotations[requestedAtAnnotation] && value != *lastHandled
	*lastHandled = value
	return act
}

// resolvedTarget is targetOf with the remote cluster of spec.kubeConfig read
// from its Secret (see releasespec.ClusterOf).
func (r *Reconciler) resolvedTarget(ctx context.Context, hr *kraanv1.HelmRelease) (helm.Target, error) {
	target := r.targetOf(hr)
	cluster, err := releasespec.ClusterOf(ctx, r.APIReader, hr)
	target.Cluster = cluster
	return target, err
}

func (r *Reconciler) targetOf(hr *kraanv1.HelmRelease) helm.Target {
	t := releasespec.TargetOf(hr, r.Tenancy.IdentityOf(hr).ServiceAccount)
	t.PostRenderStrategy = r.HelmDefaults.PostRenderStrategy(&hr.Spec)
	t.WaitStrategy, t.HealthCheckExprs = waitOf(r.HelmDefaults, &hr.Spec)
	return t
}
