package helmrelease

import (
	"context"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultRunGracePeriod is how long, once the operator is told to stop, the
// Helm actions in flight get to finish (--helm-run-grace-period). It fits
// the manager's --graceful-shutdown-timeout (30 s), which bounds it, and the
// pod's terminationGracePeriodSeconds (40 s), after which the kubelet kills.
const DefaultRunGracePeriod = 25 * time.Second

// runLifecycle ties the Helm runs, which outlive the reconciles that start
// them, to the manager's: a stopping operator starts no run and gives the
// runs in flight a grace period to finish, so that a rolling update of the
// operator (or an OLM upgrade) does not cut Helm actions mid-way. A run cut
// anyway leaves its revision pending: the next leader resumes its wait when
// it can, and unlocks it (a failed revision) otherwise, e.g. when it had not
// applied all its objects or a post hook was left to run.
//
// It is a manager Runnable that needs leader election: it stops with the
// controllers, before the Lease is released, so the next leader does not act
// on a release while this process still runs its action.
type runLifecycle struct {
	grace time.Duration

	mu sync.Mutex
	// running counts the runs started and not ended: the stop waits for
	// none, and runs.freeMemoryIfIdle for a wave's end.
	running int
	// stopped is closed when the operator starts stopping: no run starts
	// any more, a run waiting for a slot gives up, and re-queues nobody
	// reads are dropped.
	stopped chan struct{}
	// drained is closed once stopped and no run is left.
	drained chan struct{}
}

func newRunLifecycle(grace time.Duration) *runLifecycle {
	return &runLifecycle{grace: grace, stopped: make(chan struct{}), drained: make(chan struct{})}
}

// enter registers a run about to start; false once the operator stops.
func (l *runLifecycle) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping() {
		return false
	}
	l.running++
	return true
}

// leave records the end of a run enter let start and returns how many runs
// are left.
func (l *runLifecycle) leave() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	if l.running == 0 && l.stopping() {
		close(l.drained)
	}
	return l.running
}

// inFlight is how many runs are going on.
func (l *runLifecycle) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// stopping says whether the stop began; l.mu held.
func (l *runLifecycle) stopping() bool {
	select {
	case <-l.stopped:
		return true
	default:
		return false
	}
}

// Start waits for the manager to stop, then for the runs in flight, at most
// the grace period.
func (l *runLifecycle) Start(ctx context.Context) error {
	<-ctx.Done()
	log := ctrl.Log.WithName("helm-runs")
	l.mu.Lock()
	close(l.stopped)
	running := l.running
	if running == 0 {
		close(l.drained)
	}
	l.mu.Unlock()
	if running == 0 {
		return nil
	}
	log.Info("Stopping: waiting for the Helm runs in flight to finish", "runs", running, "gracePeriod", l.grace)
	timer := time.NewTimer(l.grace)
	defer timer.Stop()
	select {
	case <-l.drained:
		log.Info("Stopping: every Helm run in flight finished")
	case <-timer.C:
		log.Info("Stopping with Helm runs unfinished after the grace period: the next leader resumes their releases",
			"runs", l.inFlight(), "gracePeriod", l.grace)
	}
	return nil
}

// NeedLeaderElection: only the leader runs Helm actions.
func (l *runLifecycle) NeedLeaderElection() bool { return true }
