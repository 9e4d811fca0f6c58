// Package helmrun is the home of the Helm runs that go on outside a
// controller's workers: a worker starts a run and returns at once; the run
// renders, applies and waits for the cluster without holding a worker, and
// its end re-queues the object, whose next reconcile takes the outcome.
//
// Runs owns everything such a run needs, so that a controller sees a small
// surface (Launch, Take, Active, Supersede, Forget; Admit for the rollout
// queue; the write memory): the registry of runs, the fair slots that bound
// the runs working at once, the rollout pacing, the progress reports, and
// the lifecycle that ties the runs to the manager — no run starts once the
// operator stops, the runs in flight get a grace period, and their context
// is cancelled when it is over.
package helmrun

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kraan-io/kraan-operator/internal/fair"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/pace"
)

// Run is one Helm run and what it was started for. T is the caller's: what
// it needs back with the outcome (the desired state, the requests handled).
type Run[T any] struct {
	// Key is the object the run is for.
	Key types.NamespacedName
	// Attempt identifies the desired state the run is for.
	Attempt string
	// Generation is the object's generation the run is for.
	Generation int64
	// Request is the engine's run; ignored when Uninstall is set.
	Request helm.Request
	// Uninstall, when set, is what the run does instead of the request: the
	// uninstall of a deleted release, which may wait for its objects to go
	// (pause frees the run's slot meanwhile).
	Uninstall func(ctx context.Context, pause func() func()) error
	// Report, when set, is told the action the run is in once it has run
	// for Runs.ProgressDelay of the request's timeout.
	Report func(ctx context.Context, action helm.Action)
	// For is the caller's.
	For T

	// superseded is closed when a newer generation of the object arrives
	// while the run waits: its action's wait ends (helm.Request.WaitSuperseded).
	superseded chan struct{}

	// set when the run ends
	finished bool
	result   helm.Result
	err      error
}

// NewRun returns the run of key at generation. An interruptible run's wait
// ends when Supersede is told of a newer generation: its request takes
// Superseded as WaitSuperseded.
func NewRun[T any](key types.NamespacedName, generation int64, interruptible bool) *Run[T] {
	r := &Run[T]{Key: key, Generation: generation}
	if interruptible {
		r.superseded = make(chan struct{})
	}
	return r
}

// Superseded is closed when a newer generation ends the run's wait; nil for
// a run whose wait is never cut short.
func (r *Run[T]) Superseded() <-chan struct{} { return r.superseded }

// Outcome is what the engine returned.
func (r *Run[T]) Outcome() (helm.Result, error) { return r.result, r.err }

// Runs are the Helm runs going on outside the workers, for objects of one
// kind. A worker is never blocked on a rollout: the workers (--concurrent)
// bound only the work done between waits, and so do the slots here.
type Runs[T any] struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]*Run[T]
	// idle returns memory to the system once a wave of runs is over.
	idle *time.Timer
	// slots bound the runs working (not waiting) at once, shared fairly
	// between namespaces: one namespace's wave of runs delays its own.
	slots     *fair.Slots
	slotCount int
	// ended re-queues an object whose run ended, or whose turn in the
	// rollout queue came.
	ended chan event.GenericEvent
	// object is an object of the kind with the key, for the re-queue.
	object func(types.NamespacedName) client.Object
	life   *lifecycle
	pacer  *pace.Pacer
	// onPacing is told the pacing's numbers after each change.
	onPacing func(pace.Stats)
	// Written is what the controller last wrote about each object.
	Written *WriteLog
}

// Options configure Runs.
type Options struct {
	// Workers is the controller's --concurrent: SlotsPerWorker runs work
	// at once per worker.
	Workers int
	// Grace is how long the runs in flight may finish once the operator
	// stops; 0 means DefaultGracePeriod.
	Grace time.Duration
	// MaxRollouts caps the releases rolling out at once
	// (--max-concurrent-rollouts); 0 means pace.DefaultMax.
	MaxRollouts int
	// Object returns an object of the controlled kind with the key: the end
	// of a run re-queues it.
	Object func(types.NamespacedName) client.Object
	// OnPacing, when set, is told the rollout pacing's numbers (metrics).
	OnPacing func(pace.Stats)
}

// SlotsPerWorker is how many runs may render and apply at once per worker
// (--concurrent). A run's work between waits is mostly round trips to the
// API server — creating the objects one by one, writing the release record —
// so more runs than workers keep the CPU busy: measured on a first layer of
// 10 releases, 4 slots spread their applies over 0.7 s, 8 over 0.4 s.
const SlotsPerWorker = 2

// New returns the runs of one kind. Their lifecycle is a manager Runnable
// (Lifecycle): add it, or nothing stops them.
func New[T any](opts Options) *Runs[T] {
	grace := opts.Grace
	if grace <= 0 {
		grace = DefaultGracePeriod
	}
	slots := SlotsPerWorker * max(opts.Workers, 1)
	rs := &Runs[T]{
		byKey:     map[types.NamespacedName]*Run[T]{},
		slots:     fair.NewSlots(slots),
		slotCount: slots,
		ended:     make(chan event.GenericEvent, 1024),
		object:    opts.Object,
		life:      newLifecycle(grace),
		onPacing:  opts.OnPacing,
		Written:   NewWriteLog(),
	}
	rs.pacer = pace.New(pace.Options{Max: opts.MaxRollouts, OnTurn: rs.requeue})
	return rs
}

// Lifecycle is the Runnable the manager must run: see lifecycle.
func (rs *Runs[T]) Lifecycle() interface {
	Start(context.Context) error
	NeedLeaderElection() bool
} {
	return rs.life
}

// Ended is where the end of a run, and a turn in the rollout queue, re-queue
// the object: a controller's raw source.
func (rs *Runs[T]) Ended() <-chan event.GenericEvent { return rs.ended }

// Supersede ends the wait of key's run when generation is newer than the
// one it runs for; an uninstall, and a run that may not be cut short, are
// left alone.
func (rs *Runs[T]) Supersede(key types.NamespacedName, generation int64) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.byKey[key]
	if r == nil || r.finished || r.superseded == nil || generation <= r.Generation {
		return false
	}
	select {
	case <-r.superseded:
		return false // already
	default:
		close(r.superseded)
		return true
	}
}

// Active says whether a run of key is going on (not finished).
func (rs *Runs[T]) Active(key types.NamespacedName) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.byKey[key]
	return r != nil && !r.finished
}

// Take returns the finished run of key, once.
func (rs *Runs[T]) Take(key types.NamespacedName) *Run[T] {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.byKey[key]
	if r == nil || !r.finished {
		return nil
	}
	delete(rs.byKey, key)
	return r
}

// Forget drops everything kept about a deleted object: its finished run,
// its place in the rollout queue and what was written about it.
func (rs *Runs[T]) Forget(key types.NamespacedName) {
	rs.mu.Lock()
	if r := rs.byKey[key]; r != nil && r.finished {
		delete(rs.byKey, key)
	}
	rs.mu.Unlock()
	rs.ForgetRollout(key)
	rs.Written.Forget(key)
}

// idleAfter is how long after the last run of a wave ended the memory its
// runs used (charts, manifests, Helm's clients) is handed back to the
// system, rather than kept by the Go runtime for a wave that may not come.
const idleAfter = 5 * time.Second

// Launch runs r in a goroutine of its own, on the runs' context with ctx's
// logger: the run outlives the reconcile that launched it, not the
// operator (see lifecycle). The end of the run re-queues the object. Once
// the operator stops it starts nothing: the object's status says the action
// is about to start, which the next leader does.
func (rs *Runs[T]) Launch(ctx context.Context, engine *helm.Engine, r *Run[T]) {
	if !rs.life.enter() {
		ctrl.LoggerFrom(ctx).Info("Not starting a Helm run: the operator is stopping")
		return
	}
	runCtx := ctrl.LoggerInto(rs.life.runs, ctrl.LoggerFrom(ctx))
	rs.mu.Lock()
	rs.byKey[r.Key] = r
	if rs.idle != nil {
		rs.idle.Stop()
	}
	rs.mu.Unlock()
	req := r.Request
	timeout := req.Actions.RunTimeout()
	var progress *progressReporter
	if r.Report != nil {
		// The delay is the pacing's at each action, not at the launch: a
		// wave's expected rollout grows while the run waits.
		progress = &progressReporter{delay: func() time.Duration { return rs.ProgressDelay(timeout) }, report: r.Report}
		req.BeforeAction = func(ctx context.Context, action helm.Action) { progress.action(ctx, action) }
	}
	ns := r.Key.Namespace
	req.Pause = func() func() {
		rs.slots.Release(ns)
		return func() { _ = rs.slots.Acquire(context.Background(), ns) }
	}
	began := time.Now()
	go func() {
		var (
			result helm.Result
			err    error
		)
		switch {
		case !rs.takeSlot(ns):
			err = errStoppedBeforeRun // nothing done: the next leader runs it
		case r.Uninstall != nil:
			err = uninstallRecovering(runCtx, r.Uninstall, req.Pause)
			rs.slots.Release(ns)
		default:
			result, err = runRecovering(runCtx, engine, req)
			rs.slots.Release(ns)
		}
		if progress != nil {
			progress.stop()
		}
		rs.mu.Lock()
		r.finished, r.result, r.err = true, result, err
		rs.mu.Unlock()
		if r.Uninstall == nil && !errors.Is(err, errStoppedBeforeRun) {
			rs.observe(time.Since(began), timeout)
		}
		rs.requeue(r.Key)
		if rs.life.leave() == 0 {
			rs.mu.Lock()
			rs.idle = time.AfterFunc(idleAfter, rs.freeMemoryIfIdle)
			rs.mu.Unlock()
		}
	}()
}

// takeSlot waits for a slot of namespace to work in; false when the
// operator stops first.
func (rs *Runs[T]) takeSlot(namespace string) bool {
	select {
	case <-rs.life.stopped:
		return false
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-rs.life.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	return rs.slots.Acquire(ctx, namespace) == nil
}

// errStoppedBeforeRun ends a run the operator's stop caught waiting for a
// slot: no Helm action began.
var errStoppedBeforeRun = errors.New("the operator stopped before the Helm run began")

// requeue has the object reconciled: its run ended, or its turn in the
// rollout queue came.
func (rs *Runs[T]) requeue(key types.NamespacedName) {
	select {
	case rs.ended <- event.GenericEvent{Object: rs.object(key)}:
	case <-rs.life.stopped:
		// The controller reads no more: the next leader reconciles it.
	}
}

// freeMemoryIfIdle returns the memory of a wave of runs to the system when
// no run has started since: Go's runtime would keep it until its next forced
// collection, and a node counts it against the pod all that time.
func (rs *Runs[T]) freeMemoryIfIdle() {
	if rs.life.inFlight() == 0 {
		debug.FreeOSMemory()
	}
}

// uninstallRecovering is uninstall with a panic turned into its error (see
// runRecovering).
func uninstallRecovering(ctx context.Context, uninstall func(context.Context, func() func()) error, pause func() func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the uninstall panicked: %v", p)
		}
	}()
	return uninstall(ctx, pause)
}

// runRecovering is engine.Run with a panic turned into the run's error, as
// controller-runtime does for a reconcile: one release's bug must not take
// the operator and every other release's run down.
func runRecovering(ctx context.Context, engine *helm.Engine, req helm.Request) (result helm.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			// The panic's value may quote values from Secrets: masked
			// before it is logged or recorded.
			err = req.Redactor.Error(fmt.Errorf("the Helm run panicked: %v", p))
			ctrl.LoggerFrom(ctx).Error(err, "Helm run panicked", "stack", string(debug.Stack()))
		}
	}()
	return engine.Run(ctx, req)
}
