package addonslayer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/layerspec"
)

// Inventory statuses of objects that are not (yet) judged by their health.
const (
	resourceNotDeployed = "NotDeployed"
	resourceReleased    = "Released"
)

// reconcileRender reads the layer's directory into objects. A file that does
// not parse fails the layer, naming the file, before anything is applied or
// released: what was deployed stays.
func (r *Reconciler) reconcileRender(_ context.Context, sc *layerScope) (ctrl.Result, error) {
	rendered, err := layerspec.Render(sc.layer, &layerspec.Location{Revision: sc.revision, Root: sc.root, Dir: sc.dir})
	if err != nil {
		return ctrl.Result{}, stalledFailure(kraanv1.ReasonRenderFailed, err.Error())
	}
	sc.redactor = *rendered.Redactor
	sc.objects, sc.tests = rendered.Objects, rendered.Tests
	if err := r.seal(sc); err != nil {
		return ctrl.Result{}, stalledFailure(kraanv1.ReasonRenderFailed, err.Error())
	}
	return ctrl.Result{}, nil
}

// seal puts the layer's seal on the HelmReleases it applies (see
// tenancy.Sealer): the seal is part of what is applied, so a HelmRelease a
// tenant edited is sealed again when the layer applies it again.
func (r *Reconciler) seal(sc *layerScope) error {
	if r.Options.Sealer == nil {
		return nil
	}
	for _, obj := range sc.objects {
		if err := r.Options.Sealer.Seal(sc.layer.Name, obj); err != nil {
			return err
		}
	}
	return nil
}

// reconcileHandover releases the objects the layer no longer defines, adopts
// the released objects it now defines, and prunes released objects nobody
// adopted within spec.interval. It runs before the prerequisites, as Kraan's
// prune and adoption did, so a layer waiting for its dependencies still lets
// go of what moved to another layer: otherwise an add-on moving to a layer its
// old layer depends on would deadlock.
func (r *Reconciler) reconcileHandover(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	defined := sc.defined()
	released, until, err := r.releaseAll(ctx, sc, defined)
	if err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonHandoverFailed, err)
	}
	adopted, err := sc.applier.AdoptAll(ctx, sc.layer.Name, defined)
	for i, obj := range defined {
		if adopted[i] {
			r.event(sc, "Adopted", "Adopted %s", apply.Describe(obj))
		}
	}
	if err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonHandoverFailed, err)
	}
	sc.inventory = append(desiredInventory(sc), released...)
	sc.pruneAt = until
	return ctrl.Result{}, nil
}

// releaseAll releases every inventory object not in keep (see
// apply.Applier.Release) and returns those still waiting for adoption, with
// the earliest time one of them will be pruned. Entries Kraan wrote are
// skipped, and so drop out of the inventory: what they name is Kraan's (see
// kraanv1.Resource.WrittenByKraan). Were the layer deleted, Kubernetes garbage
// collection follows Kraan's ownerReferences, as after Kraan's own finalizer.
func (r *Reconciler) releaseAll(ctx context.Context, sc *layerScope, keep []*unstructured.Unstructured) ([]kraanv1.Resource, time.Time, error) {
	wanted := make(map[string]bool, len(keep))
	for _, obj := range keep {
		wanted[apply.RefOf(obj).Key()] = true
	}
	var pending []kraanv1.Resource
	var until time.Time
	for _, res := range sc.layer.Status.Resources {
		ref := apply.RefOfResource(res)
		if res.WrittenByKraan() || wanted[ref.Key()] {
			continue
		}
		out, err := sc.applier.Release(ctx, sc.layer.Name, ref, sc.layer.Spec.Interval.Duration, sc.now)
		if err != nil {
			return nil, time.Time{}, err
		}
		switch out.Outcome {
		case apply.Pending:
			res.Status = resourceReleased
			pending = append(pending, res)
			if until.IsZero() || out.Until.Before(until) {
				until = out.Until
			}
		case apply.Pruned:
			r.event(sc, "Pruned", "Pruned %s", ref)
		case apply.Gone:
		}
	}
	return pending, until, nil
}

// desiredInventory lists the layer's objects, then its tests, keeping the
// status each had.
func desiredInventory(sc *layerScope) []kraanv1.Resource {
	previous := make(map[string]kraanv1.Resource, len(sc.layer.Status.Resources))
	for _, res := range sc.layer.Status.Resources {
		previous[apply.RefOfResource(res).Key()] = res
	}
	defined := sc.defined()
	inv := make([]kraanv1.Resource, 0, len(defined))
	for _, obj := range defined {
		ref := apply.RefOf(obj)
		res := kraanv1.Resource{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			Status: resourceNotDeployed, LastTransitionTime: metav1.NewTime(sc.now)}
		if old, ok := previous[ref.Key()]; ok && old.Status != resourceReleased {
			res.Status, res.LastTransitionTime = old.Status, old.LastTransitionTime
		}
		inv = append(inv, res)
	}
	return inv
}

// reconcileApply applies the objects server-side. An object another layer
// owns fails the layer, naming both, and is retried soon: the owner may be
// about to release it.
//
// A layer still waiting for the health of what this process applied less
// than reapplyAfter ago, unchanged since, is not applied again: its reconcile
// only checks health (see reapplyAfter).
func (r *Reconciler) reconcileApply(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	sc.digest = desiredDigest(sc)
	waiting := !apimeta.IsStatusConditionTrue(sc.layer.Status.Conditions, kraanv1.DeployedCondition)
	if waiting && sc.digest != "" && r.recent.fresh(sc.recentKey(), sc.digest, sc.now) {
		sc.applySkipped = true
		sc.applyingSince = applyingSince(sc, false)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.apply(ctx, sc)
}

// apply applies the layer's objects and remembers it.
func (r *Reconciler) apply(ctx context.Context, sc *layerScope) error {
	changed, err := sc.applier.Apply(ctx, sc.layer.Name, sc.objects)
	if err != nil {
		r.recent.forget(sc.recentKey())
		return applyFailure(err)
	}
	r.recent.record(sc.recentKey(), sc.digest, sc.now)
	sc.applySkipped = false
	sc.applyingSince = applyingSince(sc, changed > 0)
	if changed > 0 {
		ctrl.LoggerFrom(ctx).Info("Applied layer objects", "changed", changed, "revision", sc.revision, "took", time.Since(sc.now).String())
	}
	return nil
}

// applyFailure fails the layer for an apply error. An ownership conflict is
// retried soon: the owning layer may be about to release the object.
func applyFailure(err error) error {
	var conflict *apply.OwnershipConflictError
	if errors.As(err, &conflict) {
		return waitingIn(kraanv1.FailedState, kraanv1.ReasonOwnershipConflict, conflictRetry, conflict.Error())
	}
	return failed(kraanv1.ReasonApplyFailed, err)
}

// applyingSince is when the wait for the objects' health began: now when this
// reconcile changed something, otherwise when the layer started Applying.
func applyingSince(sc *layerScope, changed bool) time.Time {
	c := apimeta.FindStatusCondition(sc.layer.Status.Conditions, kraanv1.DeployedCondition)
	waiting := c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == kraanv1.ReasonProgressing || c.Reason == kraanv1.ReasonHealthCheckFailed)
	if changed || !waiting {
		return sc.now
	}
	return c.LastTransitionTime.Time
}

// reconcileReadiness records every object's health in the inventory and waits
// for all of them. The message names the first object not ready and its
// latest reason. Past spec.timeout the layer is Failed, and keeps checking.
func (r *Reconciler) reconcileReadiness(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	health, err := sc.applier.HealthOfAll(ctx, sc.objects)
	if err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonApplyFailed, err)
	}
	if sc.applySkipped && slices.ContainsFunc(health, func(h apply.Health) bool { return h.Reason == apply.NotFound }) {
		// An object was deleted since it was applied: re-create it now, and
		// read again only the health of what was missing.
		if err := r.apply(ctx, sc); err != nil {
			return ctrl.Result{}, err
		}
		for i := range health {
			if health[i].Reason != apply.NotFound {
				continue
			}
			if health[i], err = sc.applier.HealthOf(ctx, sc.objects[i]); err != nil {
				return ctrl.Result{}, failed(kraanv1.ReasonApplyFailed, err)
			}
		}
	}
	var first string
	for i, obj := range sc.objects {
		h := health[i]
		setResourceStatus(&sc.inventory[i], h, sc.now)
		if !h.Ready && first == "" {
			first = fmt.Sprintf("waiting for %s: %s: %s", apply.Describe(obj), h.Reason, h.Message)
		}
	}
	if first == "" {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, waitOrTimeout(sc, first)
}

// waitOrTimeout waits, polling, for what is described; past spec.timeout since
// the layer started applying, the layer is Failed, and it keeps checking.
func waitOrTimeout(sc *layerScope, waitingFor string) error {
	if waited := sc.now.Sub(sc.applyingSince); waited > sc.layer.Spec.Timeout.Duration {
		return waitingIn(kraanv1.FailedState, kraanv1.ReasonHealthCheckFailed, healthPollInterval,
			fmt.Sprintf("not ready after %s (spec.timeout %s): %s", waited.Round(time.Second), sc.layer.Spec.Timeout.Duration, waitingFor))
	}
	return waitingIn(kraanv1.ApplyingState, kraanv1.ReasonProgressing, healthPollInterval, "AddonsLayer is being applied, "+waitingFor)
}

// setResourceStatus records h in an inventory entry: Deployed, or the reason.
func setResourceStatus(res *kraanv1.Resource, h apply.Health, now time.Time) {
	status := h.Reason
	if h.Ready {
		status = kraanv1.DeployedState
	}
	if res.Status != status {
		res.Status, res.LastTransitionTime = status, metav1.NewTime(now)
	}
}

// event records a Normal event about the layer.
func (r *Reconciler) event(sc *layerScope, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if sc.cluster != "" {
		msg = "cluster " + sc.cluster + ": " + msg
	}
	r.Events.Normal(sc.layer, reason, msg)
}
