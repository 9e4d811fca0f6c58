package kit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kraan-io/kraan-operator/internal/outcome"
)

func TestRunSteps_StopsAtTheFirstHalt(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		steps   []string // "go", "requeue", "fail"
		wantRan []int
		wantRes ctrl.Result
		wantErr error
	}{
		{"all go", []string{"go", "go", "go"}, []int{0, 1, 2}, ctrl.Result{}, nil},
		{"requeue halts", []string{"go", "requeue", "go"}, []int{0, 1}, ctrl.Result{RequeueAfter: time.Second}, nil},
		{"error halts", []string{"fail", "go"}, []int{0}, ctrl.Result{}, boom},
		{"no steps", nil, nil, ctrl.Result{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var ran []int
			steps := make([]Step[*[]int], 0, len(tc.steps))
			for i, kind := range tc.steps {
				steps = append(steps, func(_ context.Context, ran *[]int) (ctrl.Result, error) {
					*ran = append(*ran, i)
					switch kind {
					case "requeue":
						return ctrl.Result{RequeueAfter: time.Second}, nil
					case "fail":
						return ctrl.Result{}, boom
					}
					return ctrl.Result{}, nil
				})
			}
			res, err := RunSteps(context.Background(), &ran, steps...)
			g.Expect(ran).To(Equal(tc.wantRan))
			g.Expect(res).To(Equal(tc.wantRes))
			if tc.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(tc.wantErr))
			}
		})
	}
}

func TestClassify_AndResultOf(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	plain := errors.New("connection reset")
	cases := []struct {
		name       string
		err        error
		class      outcome.Class
		reason     string
		wantResult ctrl.Result
		wantErr    bool
	}{
		{"terminal, wrapped", fmt.Errorf("ctx: %w", outcome.Terminal("ChartNotFound", plain)), outcome.ClassTerminal, "ChartNotFound", ctrl.Result{}, false},
		{"terminal with a resync", &outcome.TerminalError{Reason: "LayerTestFailed", Err: plain, Resync: time.Hour}, outcome.ClassTerminal, "LayerTestFailed", ctrl.Result{RequeueAfter: time.Hour}, false},
		{"waiting", outcome.Waiting("DependencyNotReady", time.Minute, plain), outcome.ClassWaiting, "DependencyNotReady", ctrl.Result{RequeueAfter: time.Minute}, false},
		{"transient", outcome.Transient("ArtifactFailed", plain), outcome.ClassTransient, "ArtifactFailed", ctrl.Result{}, true},
		{"transient wrapping a forbidden error stays transient", outcome.Transient("X", apierrors.NewForbidden(gr, "x", plain)), outcome.ClassTransient, "X", ctrl.Result{}, true},
		{"forbidden", apierrors.NewForbidden(gr, "x", plain), outcome.ClassTerminal, "fallback", ctrl.Result{}, false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "X"}, "x", nil), outcome.ClassTerminal, "fallback", ctrl.Result{}, false},
		{"conflict", apierrors.NewConflict(gr, "x", plain), outcome.ClassTransient, "fallback", ctrl.Result{}, true},
		{"server timeout", apierrors.NewServerTimeout(gr, "get", 1), outcome.ClassTransient, "fallback", ctrl.Result{}, true},
		{"unknown", plain, outcome.ClassTransient, "fallback", ctrl.Result{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(outcome.Classify(tc.err)).To(Equal(tc.class), tc.class.String())
			g.Expect(outcome.ReasonOf(tc.err, "fallback")).To(Equal(tc.reason))
			res, err := ResultOf(tc.err)
			g.Expect(res).To(Equal(tc.wantResult))
			g.Expect(err != nil).To(Equal(tc.wantErr))
		})
	}
	res, err := ResultOf(nil)
	NewWithT(t).Expect(res.IsZero() && err == nil).To(BeTrue())
}

func TestSummary_Ready(t *testing.T) {
	s := Summary{
		Owned: []Owned{
			{Type: "Stalled", Failing: metav1.ConditionTrue},
			{Type: "Reconciling", Failing: metav1.ConditionTrue, UnknownReasons: []string{"Progressing"}},
			{Type: "Released", Failing: metav1.ConditionFalse},
		},
		Success: "Released", SuccessReason: "Succeeded", NotReadyReason: "Pending",
	}
	cond := func(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: t + " says " + reason}
	}
	cases := []struct {
		name                 string
		conds                []metav1.Condition
		status, reason, msgs string
	}{
		{"nothing observed", nil, "False", "Pending", "Not reconciled yet"},
		{"released", []metav1.Condition{cond("Released", "True", "InstallSucceeded")}, "True", "Succeeded", "Released says InstallSucceeded"},
		{"progressing is unknown", []metav1.Condition{cond("Reconciling", "True", "Progressing"), cond("Released", "True", "A")}, "Unknown", "Progressing", "Reconciling says Progressing"},
		{"retrying is false", []metav1.Condition{cond("Reconciling", "True", "ArtifactFailed")}, "False", "ArtifactFailed", "Reconciling says ArtifactFailed"},
		{"stalled wins over reconciling", []metav1.Condition{cond("Reconciling", "True", "Progressing"), cond("Stalled", "True", "RetriesExceeded")}, "False", "RetriesExceeded", "Stalled says RetriesExceeded"},
		{"not failing statuses are ignored", []metav1.Condition{cond("Stalled", "False", "X"), cond("Reconciling", "False", "Y"), cond("Released", "True", "Z")}, "True", "Succeeded", "Released says Z"},
		{"released false", []metav1.Condition{cond("Released", "False", "UpgradeFailed")}, "False", "UpgradeFailed", "Released says UpgradeFailed"},
		{"success unknown", []metav1.Condition{cond("Released", "Unknown", "Hmm")}, "False", "Hmm", "Released says Hmm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ready := s.Ready(tc.conds, 7)
			g.Expect(string(ready.Status)).To(Equal(tc.status))
			g.Expect(ready.Reason).To(Equal(tc.reason))
			g.Expect(ready.Message).To(Equal(tc.msgs))
			g.Expect(ready.ObservedGeneration).To(Equal(int64(7)))
			conds := append([]metav1.Condition(nil), tc.conds...)
			s.SetReady(&conds, 7)
			g.Expect(conds).To(HaveLen(len(tc.conds) + 1))
		})
	}
}

func TestControllerOptions_BackOffIsBounded(t *testing.T) {
	g := NewWithT(t)
	opts := ControllerOptions{MaxConcurrentReconciles: 3, MinRetryDelay: time.Second, MaxRetryDelay: 4 * time.Second}.Controller()
	g.Expect(opts.MaxConcurrentReconciles).To(Equal(3))
	item := ctrl.Request{}
	delays := make([]time.Duration, 0, 5)
	for range 5 {
		delays = append(delays, opts.RateLimiter.When(item))
	}
	g.Expect(delays).To(Equal([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}))
	defaults := ControllerOptions{}.Controller()
	g.Expect(defaults.RateLimiter.When(item)).To(Equal(DefaultMinRetryDelay))
}

func TestBoundMessage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(BoundMessage("short")).To(Equal("short"))
	exact := strings.Repeat("a", MaxMessageLength)
	g.Expect(BoundMessage(exact)).To(Equal(exact))

	long := "failed: " + strings.Repeat("é", 3000) + " the cause"
	bounded := BoundMessage(long)
	g.Expect(len(bounded)).To(BeNumerically("<=", MaxMessageLength))
	g.Expect(utf8.ValidString(bounded)).To(BeTrue(), "cut inside a character")
	g.Expect(bounded).To(HavePrefix("failed: "))
	g.Expect(bounded).To(HaveSuffix(" the cause"), "the cause comes last and is kept")
	g.Expect(bounded).To(MatchRegexp(`… \(\d+ bytes left out\) …`))
}

// An event longer than the API server's limit on its note would be
// rejected and lost: a long failure (a server-side apply error quoted twice,
// with Helm's log) is bounded to the limit, its cause kept.
func TestBoundEventNote_FitsTheAPIServersLimit(t *testing.T) {
	g := NewWithT(t)
	long := "install failed: " + strings.Repeat("é", MaxMessageLength/3) + " the cause"
	g.Expect(len(long)).To(BeNumerically(">", MaxEventNoteLength))
	g.Expect(len(long)).To(BeNumerically("<=", MaxMessageLength), "a condition keeps it whole")
	note := BoundEventNote(long)
	g.Expect(len(note)).To(BeNumerically("<=", MaxEventNoteLength))
	g.Expect(utf8.ValidString(note)).To(BeTrue(), "cut inside a character")
	g.Expect(note).To(And(HavePrefix("install failed: "), HaveSuffix(" the cause")))
}

func TestSetStatusCondition_BoundsTheMessage(t *testing.T) {
	g := NewWithT(t)
	var conds []metav1.Condition
	SetCondition(&conds, 1, "Ready", metav1.ConditionFalse, "Failed", strings.Repeat("x", 10*MaxMessageLength))
	g.Expect(len(conds[0].Message)).To(BeNumerically("<=", MaxMessageLength))
}

// No namespace watches them all (nil); otherwise the cache holds those only.
func TestCacheNamespaces(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CacheNamespaces(nil)).To(BeNil())
	g.Expect(CacheNamespaces([]string{"a", "b"})).To(Equal(map[string]cache.Config{"a": {}, "b": {}}))
}
