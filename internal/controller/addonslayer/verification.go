package addonslayer

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/manifest"
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
func (r *Reconciler) reconcileLayerTests(ctx context.Context, sc *layerScope) *halt {
	if len(sc.tests) == 0 {
		return nil
	}
	run := manifest.LayerTestRun(sc.layer.Spec.Version, sc.revision)
	if h := r.startTestRun(ctx, sc, run); h != nil {
		return h
	}
	if _, err := r.Applier.Apply(ctx, sc.layer.Name, sc.tests); err != nil {
		return applyFailure(err)
	}
	offset := len(sc.objects) // the tests follow the objects in the inventory
	var running string
	for i, test := range sc.tests {
		h, err := r.Applier.TestHealthOf(ctx, test)
		if err != nil {
			return failed(kraanv1.ReasonApplyFailed, err)
		}
		setResourceStatus(&sc.inventory[offset+i], h, sc.now)
		if h.Failed {
			return r.testFailure(ctx, sc, test, h)
		}
		if !h.Ready && running == "" {
			running = fmt.Sprintf("running layer test %s: %s: %s", apply.Describe(test), h.Reason, h.Message)
		}
	}
	if running == "" {
		return nil
	}
	return waitOrTimeout(sc, running)
}

// startTestRun stamps the tests with run and deletes test objects left from
// another run. It halts while those are still being deleted.
func (r *Reconciler) startTestRun(ctx context.Context, sc *layerScope, run string) *halt {
	var restarting string
	for _, test := range sc.tests {
		manifest.StampLayerTestRun(test, run)
		ready, err := r.Applier.PrepareTestRun(ctx, test)
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
	return &halt{state: kraanv1.ApplyingState, reason: kraanv1.ReasonProgressing, requeue: testRestartPoll,
		message: fmt.Sprintf("AddonsLayer is being applied, starting layer test %s for version %s, revision %s: "+
			"waiting for its previous run to be deleted", restarting, sc.layer.Spec.Version, sc.revision)}
}

// testFailure fails the layer, naming the test and how it ended. Only a new
// run (version, revision) or the user deleting the test object changes the
// outcome, so the layer is Stalled; it is still resynced every spec.interval.
func (r *Reconciler) testFailure(ctx context.Context, sc *layerScope, test *unstructured.Unstructured, h apply.Health) *halt {
	output, err := r.Applier.TestOutput(ctx, test)
	if err != nil {
		output = "output not available: " + err.Error()
	}
	msg := fmt.Sprintf("layer test %s failed for version %s, revision %s: %s: %s",
		apply.Describe(test), sc.layer.Spec.Version, sc.revision, h.Reason, h.Message)
	if output != "" {
		msg += "; output: " + output
	}
	out := stalledFailure(kraanv1.ReasonLayerTestFailed, msg)
	out.requeue = sc.layer.Spec.Interval.Duration
	return out
}
