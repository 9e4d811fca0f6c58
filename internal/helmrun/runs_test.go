package helmrun

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/pace"
)

func newTestRuns(grace time.Duration) *Runs[struct{}] {
	return New[struct{}](Options{Workers: 1, Grace: grace, Object: func(key types.NamespacedName) client.Object {
		hr := &kraanv1.HelmRelease{}
		hr.Namespace, hr.Name = key.Namespace, key.Name
		return hr
	}})
}

// stopLifecycle cancels the manager's context of l and returns a channel
// closed when l's Start returned.
func stopLifecycle(l *lifecycle) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		_ = l.Start(ctx)
		close(returned)
	}()
	cancel()
	return returned
}

func TestLifecycle_StopWaitsForTheRunsInFlight(t *testing.T) {
	g := NewWithT(t)
	l := newLifecycle(time.Hour)
	g.Expect(l.enter()).To(BeTrue())
	returned := stopLifecycle(l)
	g.Eventually(l.stopped).Should(BeClosed())
	g.Expect(l.enter()).To(BeFalse(), "a run started after the stop began")
	g.Consistently(returned, 200*time.Millisecond).ShouldNot(BeClosed(), "the stop did not wait for the run in flight")
	l.leave()
	g.Eventually(returned).Should(BeClosed())
}

func TestLifecycle_StopEndsAfterTheGracePeriod(t *testing.T) {
	g := NewWithT(t)
	l := newLifecycle(50 * time.Millisecond)
	g.Expect(l.enter()).To(BeTrue())
	g.Eventually(stopLifecycle(l)).Should(BeClosed(), "the stop waited past its grace period")
	l.leave() // the run ends after the stop: nothing waits for it any more
}

func TestLifecycle_StopWithNoRunReturnsAtOnce(t *testing.T) {
	g := NewWithT(t)
	l := newLifecycle(time.Hour)
	g.Eventually(stopLifecycle(l)).Should(BeClosed())
	g.Expect(l.NeedLeaderElection()).To(BeTrue())
}

// A run waiting for a slot when the operator stops gives up without
// starting, and its re-queue, which nobody reads any more, does not block.
func TestRuns_StopCancelsRunsWaitingForASlot(t *testing.T) {
	g := NewWithT(t)
	rs := newTestRuns(time.Hour)
	for range rs.slotCount {
		g.Expect(rs.slots.Acquire(context.Background(), "ns")).To(Succeed())
	}
	for range cap(rs.ended) {
		rs.requeue(types.NamespacedName{Namespace: "ns", Name: "filler"})
	}
	took := make(chan bool, 1)
	go func() { took <- rs.takeSlot("ns") }()
	g.Consistently(took, 100*time.Millisecond).ShouldNot(Receive())
	stopLifecycle(rs.life)
	g.Eventually(took).Should(Receive(BeFalse()))
	g.Expect(rs.takeSlot("ns")).To(BeFalse(), "a slot was handed out after the stop")
	requeued := make(chan struct{})
	go func() {
		rs.requeue(types.NamespacedName{Namespace: "ns", Name: "r"})
		close(requeued)
	}()
	g.Eventually(requeued).Should(BeClosed(), "a re-queue after the stop blocked")
}

// TestRuns_SupersedeEndsOnlyAnOlderRunsWait: a newer generation closes the
// run's WaitSuperseded once; the same or an older generation, a finished run,
// an uninstall and a run that may not be cut short (the gate off) are left
// alone.
func TestRuns_SupersedeEndsOnlyAnOlderRunsWait(t *testing.T) {
	g := NewWithT(t)
	rs := newTestRuns(time.Second)
	key := types.NamespacedName{Namespace: "team", Name: "app"}
	r := &Run[struct{}]{Key: key, Generation: 2, superseded: make(chan struct{})}
	rs.byKey[key] = r
	g.Expect(rs.Supersede(key, 2)).To(BeFalse(), "the generation it runs for")
	g.Expect(rs.Supersede(key, 1)).To(BeFalse(), "an older one")
	g.Expect(rs.Supersede(key, 3)).To(BeTrue())
	g.Expect(r.superseded).To(BeClosed())
	g.Expect(rs.Supersede(key, 4)).To(BeFalse(), "closed once")

	for name, other := range map[string]*Run[struct{}]{
		"finished":    {Key: key, Generation: 2, superseded: make(chan struct{}), finished: true},
		"gate off":    {Key: key, Generation: 2},
		"no such run": nil,
	} {
		delete(rs.byKey, key)
		if other != nil {
			rs.byKey[key] = other
		}
		g.Expect(rs.Supersede(key, 3)).To(BeFalse(), name)
	}
}

// A run's progress is written only once it has run longer than a rollout
// is expected to take: at least 30 s, longer when the pacer has learnt that
// rollouts take longer or sees many in flight (a wave of thousands), so that
// a rollout of normal length costs no status write before its outcome; never
// later than half the release's timeout.
func TestProgressDelay_NoShorterThanAnExpectedRollout(t *testing.T) {
	g := NewWithT(t)
	var pacer *pace.Pacer
	fiveMinutes := 5 * time.Minute
	g.Expect(progressDelay(pacer, fiveMinutes)).To(Equal(MinProgressDelay), "without a pacer")
	pacer = pace.New(pace.Options{})
	g.Expect(progressDelay(pacer, fiveMinutes)).To(Equal(MinProgressDelay), "before any rollout")
	pacer.Observe(2*time.Second, 0)
	g.Expect(progressDelay(pacer, fiveMinutes)).To(Equal(MinProgressDelay), "3 × 2 s + 5 s is shorter")
	pacer = pace.New(pace.Options{})
	pacer.Observe(20*time.Second, 0)
	g.Expect(progressDelay(pacer, fiveMinutes)).To(Equal(65*time.Second), "3 × 20 s + 5 s")

	// 300 rolling out while one ends every 250 ms (a wave on a cluster that
	// rolls out 4 a second): a run is expected to take 75 s.
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	pacer = pace.New(pace.Options{Min: 300, Now: func() time.Time { return now }})
	for i := range 300 {
		pacer.Admit(types.NamespacedName{Namespace: "wave", Name: fmt.Sprintf("r%d", i)})
	}
	for range 100 {
		now = now.Add(250 * time.Millisecond)
		pacer.Observe(2*time.Second, 0)
	}
	g.Expect(progressDelay(pacer, fiveMinutes)).To(Equal(150*time.Second), "2 × 75 s + 5 s, but at most half the timeout")
	g.Expect(progressDelay(pacer, 10*time.Minute)).To(Equal(155*time.Second), "2 × 75 s + 5 s")
	g.Expect(progressDelay(pacer, 20*time.Second)).To(Equal(MinProgressDelay), "half of a short timeout is less than 30 s")
}

// TestLifecycle_CancelsTheRunsContextAfterTheGracePeriod: a run still going
// on when the grace period is over has its context cancelled, so nothing acts
// on the cluster for an operator that stopped; its end is recorded.
func TestLifecycle_CancelsTheRunsContextAfterTheGracePeriod(t *testing.T) {
	g := NewWithT(t)
	rs := newTestRuns(50 * time.Millisecond)
	key := types.NamespacedName{Namespace: "team", Name: "app"}
	run := NewRun[struct{}](key, 1, false)
	sawCause := make(chan error, 1)
	run.Uninstall = func(ctx context.Context, _ func() func()) error {
		<-ctx.Done()
		sawCause <- context.Cause(ctx)
		return ctx.Err()
	}
	rs.Launch(context.Background(), nil, run)
	g.Eventually(func() bool { return rs.Active(key) }).Should(BeTrue())
	g.Consistently(sawCause, 100*time.Millisecond).ShouldNot(Receive(), "the run's context ended before the stop")

	g.Eventually(stopLifecycle(rs.life)).Should(BeClosed())
	g.Eventually(sawCause).Should(Receive(MatchError(ErrGracePeriodOver)))
	g.Eventually(func() *Run[struct{}] { return rs.Take(key) }).ShouldNot(BeNil(), "the cut run's end was not recorded")
	_, err := run.Outcome()
	g.Expect(err).To(MatchError(context.Canceled))
}

// A stop with no run in flight cancels the runs' context at once too.
func TestLifecycle_StopWithNoRunCancelsTheRunsContext(t *testing.T) {
	g := NewWithT(t)
	l := newLifecycle(time.Hour)
	g.Eventually(stopLifecycle(l)).Should(BeClosed())
	g.Expect(l.runs.Done()).To(BeClosed())
}
