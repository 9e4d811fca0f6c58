package helmrelease

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// stopLifecycle cancels the manager's context of l and returns a channel
// closed when l's Start returned.
func stopLifecycle(l *runLifecycle) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		_ = l.Start(ctx)
		close(returned)
	}()
	cancel()
	return returned
}

func TestRunLifecycle_StopWaitsForTheRunsInFlight(t *testing.T) {
	g := NewWithT(t)
	l := newRunLifecycle(time.Hour)
	g.Expect(l.enter()).To(BeTrue())
	returned := stopLifecycle(l)
	g.Eventually(l.stopped).Should(BeClosed())
	g.Expect(l.enter()).To(BeFalse(), "a run started after the stop began")
	g.Consistently(returned, 200*time.Millisecond).ShouldNot(BeClosed(), "the stop did not wait for the run in flight")
	l.leave()
	g.Eventually(returned).Should(BeClosed())
}

func TestRunLifecycle_StopEndsAfterTheGracePeriod(t *testing.T) {
	g := NewWithT(t)
	l := newRunLifecycle(50 * time.Millisecond)
	g.Expect(l.enter()).To(BeTrue())
	g.Eventually(stopLifecycle(l)).Should(BeClosed(), "the stop waited past its grace period")
	l.leave() // the run ends after the stop: nothing waits for it any more
}

func TestRunLifecycle_StopWithNoRunReturnsAtOnce(t *testing.T) {
	g := NewWithT(t)
	l := newRunLifecycle(time.Hour)
	g.Eventually(stopLifecycle(l)).Should(BeClosed())
	g.Expect(l.NeedLeaderElection()).To(BeTrue())
}

// A run waiting for a slot when the operator stops gives up without
// starting, and its re-queue, which nobody reads any more, does not block.
func TestRuns_StopCancelsRunsWaitingForASlot(t *testing.T) {
	g := NewWithT(t)
	rs := newRuns(1, time.Hour)
	for range rs.slotCount {
		g.Expect(rs.slots.Acquire(context.Background(), "ns")).To(Succeed())
	}
	for range cap(rs.ended) {
		rs.requeue(types.NamespacedName{Namespace: "ns", Name: "filler"})
	}
	took := make(chan bool, 1)
	go func() { took <- rs.takeSlot("ns") }()
	g.Consistently(took, 100*time.Millisecond).ShouldNot(Receive())
	stopLifecycle(rs.lifecycle)
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
	rs := newRuns(1, time.Second)
	key := types.NamespacedName{Namespace: "team", Name: "app"}
	r := &run{key: key, generation: 2, superseded: make(chan struct{})}
	rs.byKey[key] = r
	g.Expect(rs.supersede(key, 2)).To(BeFalse(), "the generation it runs for")
	g.Expect(rs.supersede(key, 1)).To(BeFalse(), "an older one")
	g.Expect(rs.supersede(key, 3)).To(BeTrue())
	g.Expect(r.superseded).To(BeClosed())
	g.Expect(rs.supersede(key, 4)).To(BeFalse(), "closed once")

	for name, other := range map[string]*run{
		"finished":    {key: key, generation: 2, superseded: make(chan struct{}), finished: true},
		"gate off":    {key: key, generation: 2},
		"no such run": nil,
	} {
		delete(rs.byKey, key)
		if other != nil {
			rs.byKey[key] = other
		}
		g.Expect(rs.supersede(key, 3)).To(BeFalse(), name)
	}
}
