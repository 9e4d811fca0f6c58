package addonslayer

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/layerspec"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// TestSetReadyCondition_EveryCombination sets every combination of the
// layer's owned conditions (absent, True, False) and checks the one Ready
// against the rule stated without the table: Ready is True exactly when the
// layer is Deployed and neither stalled nor reconciling, and otherwise
// carries the reason of the most severe condition; a layer on hold is never
// Ready.
func TestSetReadyCondition_EveryCombination(t *testing.T) {
	statuses := []metav1.ConditionStatus{"", metav1.ConditionTrue, metav1.ConditionFalse}
	for _, held := range []bool{false, true} {
		for _, stalled := range statuses {
			for _, reconciling := range statuses {
				for _, deployed := range statuses {
					checkLayerReady(t, held, stalled, reconciling, deployed)
				}
			}
		}
	}
}

// checkLayerReady sets one combination and checks Ready against the rule.
func checkLayerReady(t *testing.T, held bool, stalled, reconciling, deployed metav1.ConditionStatus) {
	t.Helper()
	types := []string{kraanv1.StalledCondition, kraanv1.ReconcilingCondition, kraanv1.DeployedCondition}
	obj := &kraanv1.AddonsLayer{}
	for i, s := range []metav1.ConditionStatus{stalled, reconciling, deployed} {
		if s != "" {
			obj.Status.Conditions = append(obj.Status.Conditions, metav1.Condition{
				Type: types[i], Status: s, Reason: types[i] + string(s), Message: "m"})
		}
	}
	out := layerOutcome{state: kraanv1.ApplyingState, reason: "OutcomeReason", message: "outcome message"}
	if held {
		out.state, out.reason = kraanv1.HoldState, kraanv1.ReasonOnHold
	}
	setReadyCondition(obj, out)
	ready := apimeta.FindStatusCondition(obj.Status.Conditions, kraanv1.ReadyCondition)

	wantTrue := !held && stalled != metav1.ConditionTrue && reconciling != metav1.ConditionTrue && deployed == metav1.ConditionTrue
	var wantReason string
	switch {
	case held:
		wantReason = kraanv1.ReasonOnHold
	case stalled == metav1.ConditionTrue:
		wantReason = kraanv1.StalledCondition + "True"
	case reconciling == metav1.ConditionTrue:
		wantReason = kraanv1.ReconcilingCondition + "True"
	case deployed == "":
		wantReason = kraanv1.ReasonProgressing
	default:
		wantReason = kraanv1.DeployedCondition + string(deployed)
	}
	name := fmt.Sprintf("held=%v stalled=%q reconciling=%q deployed=%q", held, stalled, reconciling, deployed)
	if (ready.Status == metav1.ConditionTrue) != wantTrue || ready.Reason != wantReason {
		t.Errorf("%s: Ready %s/%s, want true=%v reason %s", name, ready.Status, ready.Reason, wantTrue, wantReason)
	}
	if ready.Status == metav1.ConditionUnknown {
		t.Errorf("%s: a layer's Ready is never Unknown", name)
	}
}

// TestSourceError_EachFailureHasItsState: how each way of failing to locate
// the layer's directory reports and when the layer is looked at again.
func TestSourceError_EachFailureHasItsState(t *testing.T) {
	// spec.interval as Reconcile raised it to --min-reconcile-interval.
	sc := &layerScope{layer: &kraanv1.AddonsLayer{}, interval: time.Minute}
	plain := errors.New("boom")
	tests := []struct {
		name    string
		err     error
		want    layerOutcome
		requeue time.Duration
		backoff bool
	}{
		{"no artifact yet", &layerspec.NotReadyError{Message: "layer source: GitRepository/ns/x not found"},
			layerOutcome{state: kraanv1.PendingState, reason: kraanv1.ReasonSourceNotReady, message: "layer source: GitRepository/ns/x not found"},
			time.Minute, false},
		{"an artifact unusable as it is", &layerspec.FetchError{Err: fmt.Errorf("fetching: %w", source.ErrInvalidArtifact)},
			layerOutcome{state: kraanv1.FailedState, reason: kraanv1.ReasonArtifactFailed, stalled: true,
				message: "AddonsLayer failed, fetching: " + source.ErrInvalidArtifact.Error()}, 0, false},
		{"a failed download", &layerspec.FetchError{Err: plain},
			layerOutcome{state: kraanv1.FailedState, reason: kraanv1.ReasonArtifactFailed, message: "AddonsLayer failed, boom"},
			time.Minute, false},
		{"the store", &layerspec.StoreError{Err: plain},
			layerOutcome{state: kraanv1.FailedState, reason: kraanv1.ReasonArtifactFailed, message: "AddonsLayer failed, boom"}, 0, true},
		{"no such path", &layerspec.PathError{Message: "no ./x: check spec.source.path"},
			layerOutcome{state: kraanv1.FailedState, reason: kraanv1.ReasonPathNotFound, stalled: true,
				message: "AddonsLayer failed, no ./x: check spec.source.path"}, 0, false},
		{"a failed read of the source", plain,
			layerOutcome{state: kraanv1.FailedState, reason: kraanv1.ReasonSourceNotReady, message: "AddonsLayer failed, boom"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := sourceError(sc, tt.err)
			g.Expect(outcomeOf(err)).To(Equal(tt.want))
			res, retErr := kit.ResultOf(err)
			g.Expect(res.RequeueAfter).To(Equal(tt.requeue))
			g.Expect(retErr != nil).To(Equal(tt.backoff))
		})
	}
}
