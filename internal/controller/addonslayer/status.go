package addonslayer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/redact"
)

// Requeue delays. Watches trigger most reconciles; these are the fallbacks.
const (
	// healthPollInterval re-checks objects while Applying: kinds other than
	// HelmReleases and workloads are not watched, so a poll catches them.
	healthPollInterval = 5 * time.Second
	// conflictRetry re-checks an ownership conflict: the owning layer may be
	// about to release the object in a reconcile of its own, which does not
	// trigger this layer. It must be well below the grace period (spec.interval,
	// 1m by default) so the object is adopted before it is pruned.
	conflictRetry = 2 * time.Second
)

// layerScope carries what one reconcile observed, step by step.
type layerScope struct {
	layer    *kraanv1.AddonsLayer
	patcher  *kit.Patcher
	oldState string
	now      time.Time
	// started is when the pass began, for its duration metric.
	started time.Time
	// interval is spec.interval raised to --min-reconcile-interval: how
	// often a deployed, waiting or failed layer is looked at again.
	interval time.Duration

	// reconcileSource: the artifact's revision and the layer's directory in it.
	revision string
	root     string
	dir      string
	// reconcileRender: the objects of the layer, in apply order, its tests
	// (applied last, see reconcileLayerTests), and warnings.
	objects  []*unstructured.Unstructured
	tests    []*unstructured.Unstructured
	warnings []string
	// reconcileHandover: the inventory (desired ∪ released), and when the
	// first released object is pruned.
	inventory []kraanv1.Resource
	pruneAt   time.Time
	// reconcileApply: when the layer started waiting for this version's objects;
	// the digest of what it applies, and whether this reconcile skipped the
	// apply (see reapplyAfter).
	applyingSince time.Time
	digest        string
	applySkipped  bool

	deleted bool
	// applier and discovery reach the cluster the steps act on: the
	// operator's own, or, for a placed layer, one of its clusters.
	applier   *apply.Applier
	discovery discovery.ServerVersionInterface
	// cluster is the key of the registered cluster the steps act on; empty
	// for the operator's own cluster.
	cluster string
	// fleet is what a placed layer's pass found (reconcilePlacement).
	fleet *fleetPass
	// redactor masks the values of the layer's Secrets (reconcileRender).
	redactor redact.Redactor
}

func newLayerScope(c client.Client, obj *kraanv1.AddonsLayer, now time.Time) *layerScope {
	return &layerScope{layer: obj, patcher: kit.NewPatcher(c, obj), oldState: obj.Status.State, now: now}
}

// recentKey identifies the layer, on its cluster, in recentApplies.
func (sc *layerScope) recentKey() string {
	if sc.cluster == "" {
		return sc.layer.Name
	}
	return sc.layer.Name + "\x00" + sc.cluster
}

// defined is every object the layer's source defines: its objects, then its tests.
func (sc *layerScope) defined() []*unstructured.Unstructured {
	return append(append(make([]*unstructured.Unstructured, 0, len(sc.objects)+len(sc.tests)), sc.objects...), sc.tests...)
}

// failCondition sets condType False with what err reports, masked as
// finish masks the outcome (a step's condition is written with the status,
// past finish's redaction), and returns err.
func (sc *layerScope) failCondition(condType string, err error) error {
	out := outcomeOf(sc.redactor.Error(err))
	setLayerCondition(sc.layer, condType, false, out.reason, out.message)
	return err
}

// layerError ends a layer's reconcile: one of kit's typed errors, whose
// class decides when the layer is looked at again and whose reason the
// conditions carry, and the state (status.state, Kraan's vocabulary) it
// leaves the layer in.
type layerError struct {
	state string
	err   error
}

func (e *layerError) Error() string { return e.err.Error() }
func (e *layerError) Unwrap() error { return e.err }

// failed: the layer is Failed, and retried with back-off.
func failed(reason string, err error) error {
	return &layerError{state: kraanv1.FailedState, err: outcome.Transient(reason, err)}
}

// stalledFailure: the layer is Failed and Stalled until the user changes
// something (its spec, its source).
func stalledFailure(reason, message string) error {
	return &layerError{state: kraanv1.FailedState, err: outcome.Terminal(reason, errors.New(message))}
}

// waitingIn: the layer is in state, and looked at again after `after` (0:
// when a watch says something changed), without back-off.
func waitingIn(state, reason string, after time.Duration, message string) error {
	return &layerError{state: state, err: outcome.Waiting(reason, after, errors.New(message))}
}

// layerOutcome is what a reconcile reports: the layer's state, and the reason
// and message of its conditions and event.
type layerOutcome struct {
	state   string
	reason  string
	message string
	// stalled means only a change by the user (spec, source) can help.
	stalled bool
	// requeue is when a Deployed layer is looked at again.
	requeue time.Duration
}

// outcomeOf is what err, the error a step ended the reconcile with, reports.
// An error that is not a layerError (a bug, an API call outside the steps)
// leaves the layer Failed.
func outcomeOf(err error) layerOutcome {
	out := layerOutcome{state: kraanv1.FailedState, reason: outcome.ReasonOf(err, kraanv1.ReasonReconcileError),
		message: err.Error(), stalled: outcome.Classify(err) == outcome.ClassTerminal}
	var le *layerError
	if errors.As(err, &le) {
		out.state = le.state
	}
	if out.state == kraanv1.FailedState {
		out.message = "AddonsLayer failed, " + out.message
	}
	return out
}

// deployed is the outcome of a reconcile that went through every step. It
// comes back after spec.interval to correct drift, or earlier when a released
// object is due for pruning.
func deployed(sc *layerScope) layerOutcome {
	if sc.fleet != nil {
		return layerOutcome{state: kraanv1.DeployedState, reason: kraanv1.ReasonDeployed, requeue: sc.interval,
			message: fmt.Sprintf("AddonsLayer version %s is Deployed on %d clusters, revision %s", sc.layer.Spec.Version, sc.fleet.deployed, sc.revision)}
	}
	msg := fmt.Sprintf("AddonsLayer version %s is Deployed, revision %s, %d objects ready",
		sc.layer.Spec.Version, sc.revision, len(sc.objects))
	if len(sc.tests) > 0 {
		msg += fmt.Sprintf(", %d layer tests passed", len(sc.tests))
	}
	requeue := sc.interval
	if !sc.pruneAt.IsZero() {
		msg += fmt.Sprintf("; released objects are pruned at %s unless another layer adopts them",
			sc.pruneAt.UTC().Format(time.RFC3339))
		requeue = min(requeue, sc.pruneAt.Sub(sc.now)+time.Second)
	}
	for _, w := range sc.warnings {
		msg += "; warning: " + w
	}
	return layerOutcome{state: kraanv1.DeployedState, reason: kraanv1.ReasonDeployed, message: msg, requeue: requeue}
}

// summarize writes the outcome into the status: state, version, revision,
// inventory and the kstatus conditions, all derived from out.
func (r *Reconciler) summarize(sc *layerScope, out layerOutcome) {
	obj := sc.layer
	obj.Status.State = out.state
	obj.Status.Version = obj.Spec.Version
	if sc.inventory != nil {
		obj.Status.Resources = sc.inventory
	}
	done := out.state == kraanv1.DeployedState || out.stalled
	if done {
		obj.Status.ObservedGeneration = obj.Generation
	}
	if out.state == kraanv1.DeployedState {
		obj.Status.Revision = sc.revision
	}
	setDeployedCondition(sc, out)
	setAbnormalCondition(obj, kraanv1.StalledCondition, out.stalled, out.reason, out.message)
	reconciling := !done && out.state != kraanv1.HoldState
	setAbnormalCondition(obj, kraanv1.ReconcilingCondition, reconciling, out.reason, out.message)
	setReadyCondition(obj, out)
	r.recordStateChange(sc, out)
}

// layerSummary derives Ready from the layer's conditions: the first failing
// one, in this order, gives Ready its reason and message; otherwise Ready
// repeats Deployed. Deployed carries the reason of every outcome but Hold, so
// the source, render, prerequisite and apply failures all reach Ready.
var layerSummary = kit.Summary{
	Owned: []kit.Owned{
		{Type: kraanv1.StalledCondition, Failing: metav1.ConditionTrue},
		{Type: kraanv1.ReconcilingCondition, Failing: metav1.ConditionTrue},
		{Type: kraanv1.DeployedCondition, Failing: metav1.ConditionFalse},
	},
	Success:        kraanv1.DeployedCondition,
	NotReadyReason: kraanv1.ReasonProgressing,
}

// setReadyCondition summarizes the conditions into Ready. A layer on hold is
// not Ready, whatever it deployed before: nothing keeps it in line meanwhile
// (Kraan's behaviour, which `kubectl wait` users rely on).
func setReadyCondition(obj *kraanv1.AddonsLayer, out layerOutcome) {
	if out.state == kraanv1.HoldState {
		setLayerCondition(obj, kraanv1.ReadyCondition, false, out.reason, out.message)
		return
	}
	layerSummary.SetReady(&obj.Status.Conditions, obj.Generation)
}

// setDeployedCondition keeps Deployed as Kraan users expect (`kubectl wait al
// --for=condition=Deployed`); Hold leaves it as it was, since nothing changes.
// While Applying, its transition time is when the wait began: spec.timeout
// counts from there.
func setDeployedCondition(sc *layerScope, out layerOutcome) {
	if out.state == kraanv1.HoldState {
		return
	}
	setLayerCondition(sc.layer, kraanv1.DeployedCondition, out.state == kraanv1.DeployedState, out.reason, out.message)
	if !sc.applyingSince.IsZero() && out.state != kraanv1.DeployedState {
		c := apimeta.FindStatusCondition(sc.layer.Status.Conditions, kraanv1.DeployedCondition)
		c.LastTransitionTime = metav1.NewTime(sc.applyingSince)
	}
}

func setLayerCondition(obj *kraanv1.AddonsLayer, condType string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	kit.SetCondition(&obj.Status.Conditions, obj.Generation, condType, s, reason, message)
}

// setAbnormalCondition sets a negative-polarity condition (Stalled,
// Reconciling) while it holds and removes it when it does not: kstatus'
// rule, which Flux follows, is that an absent one is false.
func setAbnormalCondition(obj *kraanv1.AddonsLayer, condType string, holds bool, reason, message string) {
	if !holds {
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, condType)
		return
	}
	setLayerCondition(obj, condType, true, reason, message)
}

// recordStateChange emits an event when the state changed, Warning for Failed.
func (r *Reconciler) recordStateChange(sc *layerScope, out layerOutcome) {
	if out.state == sc.oldState || sc.deleted {
		return
	}
	if out.state == kraanv1.FailedState {
		r.Events.Warning(sc.layer, out.reason, out.message)
		return
	}
	r.Events.Normal(sc.layer, out.reason, out.message)
}

// patchStatus writes the status once, as a merge patch against what was read.
func (r *Reconciler) patchStatus(ctx context.Context, sc *layerScope) error {
	if sc.deleted {
		return nil
	}
	return sc.patcher.Patch(ctx, sc.layer)
}
