package addonslayer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// testRestartPoll re-checks whether the previous run of a layer test is gone:
// deleting a Job or Pod takes a moment, and the deletion is not watched.
const testRestartPoll = time.Second

// reconcileLayerTests runs the layer's tests (objects annotated
// manifest.LayerTestAnnotation) once every other object is ready, and holds
// Deployed back until they succeed. A run is the layer's version and source
// revision: a new one deletes the previous run's test objects and applies
// them afresh, so tests run again even when nothing else changed. A failed
// test fails the layer, naming the test and the tail of its output, until a
// new run, or until the user deletes the failed test object to run it again.
func (r *Reconciler) reconcileLayerTests(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	if len(sc.tests) == 0 {
		return ctrl.Result{}, nil
	}
	run := manifest.LayerTestRun(sc.layer.Spec.Version, sc.revision)
	if err := r.startTestRun(ctx, sc, run); err != nil {
		return ctrl.Result{}, err
	}
	if _, err := sc.applier.Apply(ctx, sc.layer.Name, sc.tests); err != nil {
		return ctrl.Result{}, applyFailure(err)
	}
	offset := len(sc.objects) // the tests follow the objects in the inventory
	var running string
	for i, test := range sc.tests {
		h, err := sc.applier.TestHealthOf(ctx, test)
		if err != nil {
			return ctrl.Result{}, failed(kraanv1.ReasonApplyFailed, err)
		}
		setResourceStatus(&sc.inventory[offset+i], h, sc.now)
		if h.Failed {
			return ctrl.Result{}, r.testFailure(ctx, sc, test, h)
		}
		if !h.Ready && running == "" {
			running = fmt.Sprintf("running layer test %s: %s: %s", apply.Describe(test), h.Reason, h.Message)
		}
	}
	if running == "" {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, waitOrTimeout(sc, running)
}

// startTestRun stamps the tests with run and deletes test objects left from
// another run. It ends the reconcile while those are still being deleted.
func (r *Reconciler) startTestRun(ctx context.Context, sc *layerScope, run string) error {
	var restarting string
	for _, test := range sc.tests {
		manifest.StampLayerTestRun(test, run)
		ready, err := sc.applier.PrepareTestRun(ctx, test)
		if err != nil {
			return failed(kraanv1.ReasonApplyFailed, err)
		}
		if !ready && restarting == "" {
			restarting = apply.Describe(test)
		}
	}
	if restarting == "" {
		return nil
	}
	return waitingIn(kraanv1.ApplyingState, kraanv1.ReasonProgressing, testRestartPoll,
		fmt.Sprintf("AddonsLayer is being applied, starting layer test %s for version %s, revision %s: "+
			"waiting for its previous run to be deleted", restarting, sc.layer.Spec.Version, sc.revision))
}

// testFailure fails the layer, naming the test and how it ended. Only a new
// run (version, revision) or the user deleting the test object changes the
// outcome, so the layer is Stalled; it is still resynced every spec.interval.
func (r *Reconciler) testFailure(ctx context.Context, sc *layerScope, test *unstructured.Unstructured, h apply.Health) error {
	output, err := sc.applier.TestOutput(ctx, test)
	if err != nil {
		output = "output not available: " + err.Error()
	}
	msg := fmt.Sprintf("layer test %s failed for version %s, revision %s: %s: %s",
		apply.Describe(test), sc.layer.Spec.Version, sc.revision, h.Reason, h.Message)
	if output != "" {
		msg += "; output: " + output
	}
	return &layerError{state: kraanv1.FailedState, err: &outcome.TerminalError{
		Reason: kraanv1.ReasonLayerTestFailed, Err: errors.New(msg), Resync: sc.interval}}
}
