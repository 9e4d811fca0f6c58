package helmrelease

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// TestSummaryFor_EveryCombination sets every combination of the owned
// conditions (absent, True, False; Reconciling also True as Progressing) and
// checks the one Ready against the rule stated independently of the table's
// order: Ready is True exactly when nothing fails and Released is True;
// Unknown exactly when the only thing keeping it from True is progress; and
// its reason is that of the most severe failing condition.
// state is a condition's status and reason; the zero value is "absent".
type state struct{ status, reason string }

func TestSummaryFor_EveryCombination(t *testing.T) {
	for _, ignoreTests := range []bool{false, true} {
		hr := &kraanv1.HelmRelease{}
		hr.Generation = 3
		if ignoreTests {
			hr.Spec.Test = &kraanv1.Test{Enable: true, IgnoreFailures: true}
		}
		for _, combo := range ownedCombinations() {
			checkReleaseReady(t, hr, ignoreTests, combo)
		}
	}
}

// ownedOrder is the order of the owned conditions in a combination.
var ownedOrder = []string{kraanv1.StalledCondition, kraanv1.ReconcilingCondition, kraanv1.RemediatedCondition,
	kraanv1.TestSuccessCondition, kraanv1.ReleasedCondition}

// ownedCombinations lists every combination of the states each owned
// condition can be in, one state per condition of ownedOrder.
func ownedCombinations() [][]state {
	options := map[string][]state{
		kraanv1.StalledCondition:     {{}, {"True", kraanv1.ReasonRetriesExceeded}, {"False", "NotStalled"}},
		kraanv1.ReconcilingCondition: {{}, {"True", kraanv1.ReasonProgressing}, {"True", kraanv1.ReasonArtifactFailed}},
		kraanv1.RemediatedCondition:  {{}, {"True", kraanv1.ReasonRollbackSucceeded}, {"False", kraanv1.ReasonRollbackFailed}},
		kraanv1.TestSuccessCondition: {{}, {"True", kraanv1.ReasonTestSucceeded}, {"False", kraanv1.ReasonTestFailed}},
		kraanv1.ReleasedCondition:    {{}, {"True", kraanv1.ReasonInstallSucceeded}, {"False", kraanv1.ReasonInstallFailed}},
	}
	combos := [][]state{{}}
	for _, condType := range ownedOrder {
		next := make([][]state, 0, len(combos)*len(options[condType]))
		for _, c := range combos {
			for _, s := range options[condType] {
				next = append(next, append(append([]state(nil), c...), s))
			}
		}
		combos = next
	}
	return combos
}

// checkReleaseReady sets one combination and checks Ready against the rule.
func checkReleaseReady(t *testing.T, hr *kraanv1.HelmRelease, ignoreTests bool, combo []state) {
	t.Helper()
	var conds []metav1.Condition
	is := map[string]state{}
	for i, s := range combo {
		is[ownedOrder[i]] = s
		if s.status != "" {
			conds = append(conds, metav1.Condition{Type: ownedOrder[i], Status: metav1.ConditionStatus(s.status), Reason: s.reason, Message: "m:" + s.reason})
		}
	}
	name := fmt.Sprintf("ignoreTests=%v %v", ignoreTests, combo)
	ready := summaryFor(hr).Ready(conds, hr.Generation)

	stalled := is[kraanv1.StalledCondition].status == "True"
	progressing := is[kraanv1.ReconcilingCondition] == state{"True", kraanv1.ReasonProgressing}
	retrying := is[kraanv1.ReconcilingCondition].status == "True" && !progressing
	remediated := is[kraanv1.RemediatedCondition].status == "True"
	testsFailed := is[kraanv1.TestSuccessCondition].status == "False" && !ignoreTests
	released := is[kraanv1.ReleasedCondition].status == "True"
	failing := stalled || retrying || remediated || testsFailed || !released

	want := state{"False", firstFailingReason(stalled, retrying, remediated, testsFailed, is)}
	switch {
	case !failing && !progressing:
		want = state{"True", kraanv1.ReasonSucceeded}
	case progressing && !stalled:
		want = state{"Unknown", kraanv1.ReasonProgressing}
	}
	if got := (state{string(ready.Status), ready.Reason}); got != want {
		t.Errorf("%s: Ready %v, want %v", name, got, want)
	}
}

// firstFailingReason is the severity order users read in docs/helmreleases.md.
func firstFailingReason(stalled, retrying, remediated, testsFailed bool, is map[string]state) string {
	switch {
	case stalled:
		return is[kraanv1.StalledCondition].reason
	case retrying:
		return is[kraanv1.ReconcilingCondition].reason
	case remediated:
		return is[kraanv1.RemediatedCondition].reason
	case testsFailed:
		return is[kraanv1.TestSuccessCondition].reason
	case is[kraanv1.ReleasedCondition].status == "":
		return kraanv1.ReasonProgressing
	}
	return is[kraanv1.ReleasedCondition].reason
}

func TestSetReleasedCondition_NamesTheActionThatRan(t *testing.T) {
	failedInstall := helm.ActionTaken{Action: helm.ActionInstall, Err: errors.New("timed out waiting for the condition")}
	failedUpgrade := helm.ActionTaken{Action: helm.ActionUpgrade, Err: errors.New("pre-upgrade hooks failed")}
	rollback := helm.ActionTaken{Action: helm.ActionRollback}
	cases := []struct {
		name    string
		latest  *helm.Revision
		steps   []helm.ActionTaken
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"failed first install", &helm.Revision{Version: 1, Status: "failed"}, []helm.ActionTaken{failedInstall},
			metav1.ConditionFalse, kraanv1.ReasonInstallFailed, "timed out"},
		{"failed upgrade then rollback", &helm.Revision{Version: 3, Status: "deployed"}, []helm.ActionTaken{failedUpgrade, rollback},
			metav1.ConditionFalse, kraanv1.ReasonUpgradeFailed, "pre-upgrade hooks failed"},
		{"failed install found in storage", &helm.Revision{Version: 1, Status: "failed", Description: "Release failed"}, nil,
			metav1.ConditionFalse, kraanv1.ReasonInstallFailed, "Release failed"},
		{"failed upgrade found in storage", &helm.Revision{Version: 2, Status: "failed", Description: "Upgrade failed"}, nil,
			metav1.ConditionFalse, kraanv1.ReasonUpgradeFailed, "Upgrade failed"},
		{"installed", &helm.Revision{Name: "a", Version: 1, Status: "deployed", Matches: true}, []helm.ActionTaken{{Action: helm.ActionInstall}},
			metav1.ConditionTrue, kraanv1.ReasonInstallSucceeded, "is deployed"},
		{"upgraded", &helm.Revision{Name: "a", Version: 2, Status: "deployed", Matches: true}, []helm.ActionTaken{{Action: helm.ActionUpgrade}},
			metav1.ConditionTrue, kraanv1.ReasonUpgradeSucceeded, "is deployed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			hr := &kraanv1.HelmRelease{}
			setReleasedCondition(hr, tc.latest, tc.steps)
			c := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReleasedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tc.status))
			g.Expect(c.Reason).To(Equal(tc.reason))
			g.Expect(c.Message).To(ContainSubstring(tc.message))
		})
	}
}

func TestClassifyChartError(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		class outcome.Class
	}{
		{"version not found", &chart.VersionNotFoundError{Chart: "small", Constraint: ">=9"}, outcome.ClassTerminal},
		{"chart not found", fmt.Errorf("fetching: %w", &chart.ChartNotFoundError{Chart: "nope"}), outcome.ClassTerminal},
		{"credentials refused", &chart.AuthError{StatusCode: 401}, outcome.ClassTerminal},
		{"index 404", &chart.StatusError{StatusCode: 404}, outcome.ClassTerminal},
		{"server error", &chart.StatusError{StatusCode: 503}, outcome.ClassTransient},
		{"rate limited", &chart.StatusError{StatusCode: 429}, outcome.ClassTransient},
		{"unreachable", &chart.UnreachableError{URL: "http://127.0.0.1:1", Err: errors.New("refused")}, outcome.ClassTransient},
		{"unknown", errors.New("disk full"), outcome.ClassTransient},
		{"already waiting", outcome.Waiting(kraanv1.ReasonArtifactFailed, releasespec.SourceRetry, releasespec.ErrNoArtifact), outcome.ClassWaiting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := releasespec.ClassifyChartError(tc.err)
			g.Expect(outcome.Classify(err)).To(Equal(tc.class))
			g.Expect(outcome.ReasonOf(err, "")).To(Equal(kraanv1.ReasonArtifactFailed))
			g.Expect(errors.Is(err, tc.err) || err.Error() == tc.err.Error()).To(BeTrue())
		})
	}
}

// TestSetOutcomeConditions: a terminal error stalls and marks the generation
// handled, so no requeue is needed; a transient one keeps reconciling without
// moving observedGeneration.
func TestSetOutcomeConditions(t *testing.T) {
	cases := []struct {
		name        string
		res         ctrl.Result
		err         error
		stalled     bool
		reconciling string
		observed    bool
	}{
		{"in sync", ctrl.Result{}, nil, false, "", true},
		{"more actions", ctrl.Result{RequeueAfter: 1}, nil, false, kraanv1.ReasonProgressing, false},
		{"terminal", ctrl.Result{}, outcome.Terminal(kraanv1.ReasonArtifactFailed, errors.New("no version")), true, "", true},
		{"transient", ctrl.Result{}, outcome.Transient(kraanv1.ReasonArtifactFailed, errors.New("503")), false, kraanv1.ReasonArtifactFailed, false},
		{"waiting", ctrl.Result{}, outcome.Waiting(kraanv1.ReasonDependencyNotReady, 1, errors.New("dep")), false, kraanv1.ReasonDependencyNotReady, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			hr := &kraanv1.HelmRelease{}
			hr.Generation = 2
			setOutcomeConditions(&releaseScope{hr: hr}, tc.res, tc.err)
			g.Expect(apimeta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.StalledCondition)).To(Equal(tc.stalled))
			rec := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReconcilingCondition)
			if tc.reconciling == "" {
				g.Expect(rec).To(BeNil())
			} else {
				g.Expect(rec.Reason).To(Equal(tc.reconciling))
			}
			g.Expect(hr.Status.ObservedGeneration == 2).To(Equal(tc.observed))
		})
	}
}
