package helmrun

import (
	"context"
	"errors"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultGracePeriod is how long, once the operator is told to stop, the
// Helm actions in flight get to finish (--helm-run-grace-period). It fits
// the manager's --graceful-shutdown-timeout (30 s), which bounds it, and the
// pod's terminationGracePeriodSeconds (40 s), after which the kubelet kills.
const DefaultGracePeriod = 25 * time.Second

// ErrGracePeriodOver is the cause of the runs' context once the operator
// stopped and the grace period is over.
var ErrGracePeriodOver = errors.New("the operator stopped and the Helm runs' grace period is over")

// lifecycle ties the Helm runs, which outlive the reconciles that start
// them, to the manager's: a stopping operator starts no run and gives the
// runs in flight a grace period to finish, so that a rolling update of the
// operator (or an OLM upgrade) does not cut Helm actions mid-way. When the
// grace period is over the runs' context is cancelled: a process that goes
// on after its manager (a test, an embedding program) has no run acting on
// the cluster any more. Helm's waits do not take that context (a wait cut
// by a stop would fail the release): a run cut in its wait leaves its
// revision pending, and the next leader resumes the wait when it can and
// unlocks it (a failed revision, not counted) otherwise.
//
// It is a manager Runnable that needs leader election: it stops with the
// controllers, before the Lease is released, so the next leader does not act
// on a release while this process still runs its action.
type lifecycle struct {
	grace time.Duration
	// runs is the context every run works in; cancel ends it.
	runs   context.Context
	cancel context.CancelCauseFunc

	mu sync.Mutex
	// running counts the runs started and not ended: the stop waits for
	// none, and Runs.freeMemoryIfIdle for a wave's end.
	running int
	// stopped is closed when the operator starts stopping: no run starts
	// any more, a run waiting for a slot gives up, and re-queues nobody
	// reads are dropped.
	stopped chan struct{}
	// drained is closed once stopped and no run is left.
	drained chan struct{}
}

func newLifecycle(grace time.Duration) *lifecycle {
	runs, cancel := context.WithCancelCause(context.Background())
	return &lifecycle{grace: grace, runs: runs, cancel: cancel, stopped: make(chan struct{}), drained: make(chan struct{})}
}

// enter registers a run about to start; false once the operator stops.
func (l *lifecycle) enter() bool {
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
func (l *lifecycle) leave() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	if l.running == 0 && l.stopping() {
		close(l.drained)
	}
	return l.running
}

// inFlight is how many runs are going on.
func (l *lifecycle) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// stopping says whether the stop began; l.mu held.
func (l *lifecycle) stopping() bool {
	select {
	case <-l.stopped:
		return true
	default:
		return false
	}
}

// Start waits for the manager to stop, then for the runs in flight, at most
// the grace period; then it cancels the runs' context.
func (l *lifecycle) Start(ctx context.Context) error {
	<-ctx.Done()
	defer l.cancel(ErrGracePeriodOver)
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
		log.Info("Stopping with Helm runs unfinished after the grace period: their context is cancelled, the next leader resumes their releases",
			"runs", l.inFlight(), "gracePeriod", l.grace)
		// A cancelled run still writes its revision back as pending (Helm
		// marked it failed): a moment for that, so the process does not exit
		// between the two writes.
		l.cancel(ErrGracePeriodOver)
		settle := time.NewTimer(min(cancelSettle, l.grace))
		defer settle.Stop()
		select {
		case <-l.drained:
		case <-settle.C:
		}
	}
	return nil
}

// cancelSettle is how long a stop waits, once the runs' context is
// cancelled, for the runs to record how they were left: within the manager's
// --graceful-shutdown-timeout (30 s) after the default grace period (25 s);
// never longer than the grace period itself.
const cancelSettle = 3 * time.Second

// NeedLeaderElection: only the leader runs Helm actions.
func (l *lifecycle) NeedLeaderElection() bool { return true }
