package addonslayer

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
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

	halt    *halt
	deleted bool
	// redactor masks the values of the layer's Secrets (reconcileRender).
	redactor redact.Redactor
}

// redactHalt masks the layer's Secret values in what the halt reports.
func (sc *layerScope) redactHalt() {
	if sc.halt == nil {
		return
	}
	sc.halt.message = sc.redactor.String(sc.halt.message)
	sc.halt.err = sc.redactor.Error(sc.halt.err)
}

func newLayerScope(c client.Client, obj *kraanv1.AddonsLayer, now time.Time) *layerScope {
	return &layerScope{layer: obj, patcher: kit.NewPatcher(c, obj), oldState: obj.Status.State, now: now}
}

// defined is every object the layer's source defines: its objects, then its tests.
func (sc *layerScope) defined() []*unstructured.Unstructured {
	return append(append(make([]*unstructured.Unstructured, 0, len(sc.objects)+len(sc.tests)), sc.objects...), sc.tests...)
}

// halt ends a reconcile: the state to report and when to try again.
type halt struct {
	state   string
	reason  string
	message string
	// requeue is a delay; 0 leaves the next reconcile to watches.
	requeue time.Duration
	// stalled means only a change by the user (spec, source) can help.
	stalled bool
	// err is returned to controller-runtime, for a backoff retry.
	err error
}

func (h *halt) result() (ctrl.Result, error) {
	if h.err != nil {
		return ctrl.Result{}, h.err
	}
	return ctrl.Result{RequeueAfter: h.requeue}, nil
}

// failed is a Failed halt retried with backoff.
func failed(reason string, err error) *halt {
	return &halt{state: kraanv1.FailedState, reason: reason, message: "AddonsLayer failed, " + err.Error(), err: err}
}

// stalledFailure is a Failed halt that waits for the user to change something.
func stalledFailure(reason, message string) *halt {
	return &halt{state: kraanv1.FailedState, reason: reason, message: "AddonsLayer failed, " + message, stalled: true}
}

// deployed is the halt of a reconcile that went through every step. It comes
// back after spec.interval to correct drift, or earlier when a released object
// is due for pruning.
func deployed(sc *layerScope) *halt {
	msg := fmt.Sprintf("AddonsLayer version %s is Deployed, revision %s, %d objects ready",
		sc.layer.Spec.Version, sc.revision, len(sc.objects))
	if len(sc.tests) > 0 {
		msg += fmt.Sprintf(", %d layer tests passed", len(sc.tests))
	}
	requeue := sc.layer.Spec.Interval.Duration
	if !sc.pruneAt.IsZero() {
		msg += fmt.Sprintf("; released objects are pruned at %s unless another layer adopts them",
			sc.pruneAt.UTC().Format(time.RFC3339))
		requeue = min(requeue, sc.pruneAt.Sub(sc.now)+time.Second)
	}
	for _, w := range sc.warnings {
		msg += "; warning: " + w
	}
	return &halt{state: kraanv1.DeployedState, reason: kraanv1.ReasonDeployed, message: msg, requeue: requeue}
}

// summarize writes the outcome into the status: state, version, revision,
// inventory and the kstatus conditions, all derived from the halt.
func (r *Reconciler) summarize(sc *layerScope) {
	obj, h := sc.layer, sc.halt
	if h == nil { // a panic in a step; nothing observed to report
		return
	}
	obj.Status.State = h.state
	obj.Status.Version = obj.Spec.Version
	if sc.inventory != nil {
		obj.Status.Resources = sc.inventory
	}
	done := h.state == kraanv1.DeployedState || h.stalled
	if done {
		obj.Status.ObservedGeneration = obj.Generation
	}
	if h.state == kraanv1.DeployedState {
		obj.Status.Revision = sc.revision
	}
	r.setDeployedCondition(sc)
	setLayerCondition(obj, kraanv1.StalledCondition, h.stalled, h.reason, stalledMessage(h))
	reconciling := !done && h.state != kraanv1.HoldState
	setLayerCondition(obj, kraanv1.ReconcilingCondition, reconciling, h.reason, reconcilingMessage(h, reconciling))
	setReadyCondition(obj, h)
	r.recordStateChange(sc)
}

// layerSummary derives Ready from the layer's conditions: the first failing
// one, in this order, gives Ready its reason and message; otherwise Ready
// repeats Deployed. Deployed carries the reason of every halt but Hold, so
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
func setReadyCondition(obj *kraanv1.AddonsLayer, h *halt) {
	if h.state == kraanv1.HoldState {
		setLayerCondition(obj, kraanv1.ReadyCondition, false, h.reason, h.message)
		return
	}
	layerSummary.SetReady(&obj.Status.Conditions, obj.Generation)
}

// setDeployedCondition keeps Deployed as Kraan users expect (`kubectl wait al
// --for=condition=Deployed`); Hold leaves it as it was, since nothing changes.
// While Applying, its transition time is when the wait began: spec.timeout
// counts from there.
func (r *Reconciler) setDeployedCondition(sc *layerScope) {
	h := sc.halt
	if h.state == kraanv1.HoldState {
		return
	}
	setLayerCondition(sc.layer, kraanv1.DeployedCondition, h.state == kraanv1.DeployedState, h.reason, h.message)
	if !sc.applyingSince.IsZero() && h.state != kraanv1.DeployedState {
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

func stalledMessage(h *halt) string {
	if h.stalled {
		return h.message
	}
	return "not stalled"
}

func reconcilingMessage(h *halt, reconciling bool) string {
	if reconciling {
		return h.message
	}
	return "not reconciling: " + h.state
}

// recordStateChange emits an event when the state changed, Warning for Failed.
func (r *Reconciler) recordStateChange(sc *layerScope) {
	h := sc.halt
	if h.state == sc.oldState || sc.deleted {
		return
	}
	if h.state == kraanv1.FailedState {
		r.Events.Warning(sc.layer, h.reason, h.message)
		return
	}
	r.Events.Normal(sc.layer, h.reason, h.message)
}

// patchStatus writes the status once, as a merge patch against what was read.
func (r *Reconciler) patchStatus(ctx context.Context, sc *layerScope) error {
	if sc.deleted {
		return nil
	}
	return sc.patcher.Patch(ctx, sc.layer)
}
