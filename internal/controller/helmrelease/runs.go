package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/fair"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// runs are the Helm runs going on outside the workers. A worker starts a run
// and returns at once; the run waits for the cluster on the engine's rollout
// tracker without holding a worker or a slot, and its end re-queues the
// release, whose next reconcile records what Helm did. A worker is therefore
// never blocked on a rollout, and --concurrent bounds only the work done
// between waits (rendering, applying, writing release records).
type runs struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]*run
	// idle returns memory to the system once a wave of runs is over
	// (lifecycle counts them).
	idle *time.Timer
	// slots bounds the runs working (not waiting) at once, shared fairly
	// between namespaces: one namespace's wave of runs delays its own.
	slots *fair.Slots
	// slotCount is how many slots there are.
	slotCount int
	// ended re-queues a release whose run ended, or whose turn in the
	// rollout queue came.
	ended chan event.GenericEvent
	// lifecycle stops starting runs when the operator stops, and lets
	// those in flight finish first.
	lifecycle *runLifecycle
	// observeRun takes the duration of each run, from its start to its
	// end, and the release's timeout into the rollout pacing: the queues a
	// run meets on the way (the slots here, the cluster's controllers) all
	// make it longer.
	observeRun func(took, timeout time.Duration)
}

// run is one Engine.Run and what it was started for.
type run struct {
	key types.NamespacedName
	// attempt identifies the desired state: generation, chart and values.
	attempt        string
	desired        helm.Desired
	sourceRevision string
	generation     int64
	// handled are the reconcile, force and reset requests the run answers.
	handledReconcileAt, handledForceAt, handledResetAt string
	request                                            helm.Request
	// uninstall, when set, is what the run does instead of the request:
	// the uninstall of a deleted release, which may wait for its objects to
	// go for spec.uninstall.timeout (pause frees the run's slot meanwhile).
	uninstall func(ctx context.Context, pause func() func()) error
	// superseded is closed when a newer generation of the HelmRelease
	// arrives while the run goes on: its action's wait ends (see
	// helm.Request.WaitSuperseded). Nil: the run's wait is never cut short.
	superseded chan struct{}

	// set when the run ends
	finished bool
	result   helm.Result
	err      error
}

// slotsPerWorker is how many runs may render and apply at once per worker
// (--concurrent). A run's work between waits is mostly round trips to the
// API server — creating the objects one by one, writing the release record —
// so more runs than workers keep the CPU busy: measured on a first layer of
// 10 releases, 4 slots spread their applies over 0.7 s, 8 over 0.4 s.
const slotsPerWorker = 2

func newRuns(concurrency int, grace time.Duration) *runs {
	return &runs{
		lifecycle: newRunLifecycle(grace),
		byKey:     map[types.NamespacedName]*run{},
		slots:     fair.NewSlots(slotsPerWorker * max(concurrency, 1)),
		slotCount: slotsPerWorker * max(concurrency, 1),
		ended:     make(chan event.GenericEvent, 1024),
	}
}

// supersede ends the wait of key's run when generation is newer than the
// one it runs for; an uninstall, and a run that may not be cut short, are
// left alone.
func (rs *runs) supersede(key types.NamespacedName, generation int64) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.byKey[key]
	if r == nil || r.finished || r.superseded == nil || generation <= r.generation {
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

// active says whether a run of key is going on (not finished).
func (rs *runs) active(key types.NamespacedName) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.byKey[key]
	return r != nil && !r.finished
}

// take returns the finished run of key, once.
func (rs *runs) take(key types.NamespacedName) *run {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.byKey[key]
	if r == nil || !r.finished {
		return nil
	}
	delete(rs.byKey, key)
	return r
}

// forget drops the finished run of a deleted release.
func (rs *runs) forget(key types.NamespacedName) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.byKey[key]; r != nil && r.finished {
		delete(rs.byKey, key)
	}
}

// minProgressDelay is how long an action runs at least before its progress
// is written on the object: a quick action is reported once, when it ends,
// which saves a status write per release; a long one shows what it does
// while it runs. A release that waited in the rollout queue (one status
// write) then costs no more writes than one that did not.
const minProgressDelay = 30 * time.Second

// progressDelay is how long an action of a release with the given timeout
// runs before its progress is written: minProgressDelay, or longer when the
// pacer expects this rollout to take longer — the time after which it
// counts one as queued (3 × the fastest + 5 s), or twice what the rollouts
// in flight take at the rate the cluster delivers them (Little's law) + 5 s
// — but never more than half the timeout, by when it is news whatever the
// wave. In a wave of thousands a rollout of a minute is the norm, not news:
// the 10,000 run of 2026-12-04 wrote "Running install" for 2605 of its
// releases, most late in the wave, when 250 to 480 rolled out at once on a
// cluster that finished 4 a second.
func (r *Reconciler) progressDelay(timeout time.Duration) time.Duration {
	if r.pacer == nil {
		return minProgressDelay
	}
	delay := max(minProgressDelay, r.pacer.SlowAfter(), 2*r.pacer.ExpectedRun()+progressSlack)
	if timeout > 0 {
		delay = min(delay, max(minProgressDelay, timeout/2))
	}
	return delay
}

// progressSlack is added to twice the expected run: the spread of a few
// seconds that a small wave's runs have however they are paced.
const progressSlack = 5 * time.Second

// idleAfter is how long after the last run of a wave ended the memory its
// runs used (charts, manifests, Helm's clients) is handed back to the
// system, rather than kept by the Go runtime for a wave that may not come.
const idleAfter = 5 * time.Second

// launch runs r in a goroutine of its own. progress is where the run reports
// the action it is in; the end of the run re-queues the release. Once the
// operator stops it starts nothing: the release's status says the action is
// about to start, which the next leader does.
func (rs *runs) launch(ctx context.Context, engine *helm.Engine, r *run, progress *progressReporter) {
	if !rs.lifecycle.enter() {
		ctrl.LoggerFrom(ctx).Info("Not starting a Helm run: the operator is stopping")
		return
	}
	rs.mu.Lock()
	rs.byKey[r.key] = r
	if rs.idle != nil {
		rs.idle.Stop()
	}
	rs.mu.Unlock()
	req := r.request
	if progress != nil {
		req.BeforeAction = func(ctx context.Context, action helm.Action) { progress.report(ctx, action) }
	}
	ns := r.key.Namespace
	req.Pause = func() func() {
		rs.slots.Release(ns)
		return func() { _ = rs.slots.Acquire(context.Background(), ns) }
	}
	timeout := helm.TimeoutOf(req.Spec)
	began := time.Now()
	go func() {
		var (
			result helm.Result
			err    error
		)
		switch {
		case !rs.takeSlot(ns):
			err = errStoppedBeforeRun // nothing done: the next leader runs it
		case r.uninstall != nil:
			err = uninstallRecovering(ctx, r.uninstall, req.Pause)
			rs.slots.Release(ns)
		default:
			result, err = runRecovering(ctx, engine, req)
			rs.slots.Release(ns)
		}
		if progress != nil {
			progress.stop()
		}
		rs.mu.Lock()
		r.finished, r.result, r.err = true, result, err
		rs.mu.Unlock()
		if rs.observeRun != nil && r.uninstall == nil && !errors.Is(err, errStoppedBeforeRun) {
			rs.observeRun(time.Since(began), timeout)
		}
		rs.requeue(r.key)
		if rs.lifecycle.leave() == 0 {
			rs.mu.Lock()
			rs.idle = time.AfterFunc(idleAfter, rs.freeMemoryIfIdle)
			rs.mu.Unlock()
		}
	}()
}

// takeSlot waits for a slot of namespace to work in; false when the
// operator stops first.
func (rs *runs) takeSlot(namespace string) bool {
	select {
	case <-rs.lifecycle.stopped:
		return false
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-rs.lifecycle.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	return rs.slots.Acquire(ctx, namespace) == nil
}

// errStoppedBeforeRun ends a run the operator's stop caught waiting for a
// slot: no Helm action began.
var errStoppedBeforeRun = errors.New("the operator stopped before the Helm run began")

// requeue has the release reconciled: its run ended, or its turn in the
// rollout queue came.
func (rs *runs) requeue(key types.NamespacedName) {
	obj := &kraanv1.HelmRelease{}
	obj.Namespace, obj.Name = key.Namespace, key.Name
	select {
	case rs.ended <- event.GenericEvent{Object: obj}:
	case <-rs.lifecycle.stopped:
		// The controller reads no more: the next leader reconciles it.
	}
}

// freeMemoryIfIdle returns the memory of a wave of runs to the system when
// no run has started since: Go's runtime would keep it until its next forced
// collection, and a node counts it against the pod all that time.
func (rs *runs) freeMemoryIfIdle() {
	if rs.lifecycle.inFlight() == 0 {
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

// progressReporter writes the action a run is in on the release, once it
// has run for progressDelay. It works on a copy of the release of its own:
// the worker that started the run has moved on.
type progressReporter struct {
	mu      sync.Mutex
	sc      *releaseScope
	r       *Reconciler
	timer   *time.Timer
	stopped bool
}

func (p *progressReporter) report(ctx context.Context, action helm.Action) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(p.r.progressDelay(helm.TimeoutOf(&p.sc.hr.Spec)), func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopped {
			return
		}
		p.r.reportProgress(ctx, p.sc, action)
		p.r.written.wrote(p.sc.hr)
	})
}

func (p *progressReporter) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
}

func ctrlKey(hr *kraanv1.HelmRelease) types.NamespacedName {
	return types.NamespacedName{Namespace: hr.Namespace, Name: hr.Name}
}

// startRun prepares the run of the release's desired state; finish launches
// it once the reconcile's own writes are done.
func (r *Reconciler) startRun(ctx context.Context, sc *releaseScope) {
	hr := sc.hr
	key := ctrlKey(hr)
	run := &run{key: key, attempt: attemptOf(hr, sc.desired), desired: sc.desired, sourceRevision: sc.sourceRevision,
		generation: hr.Generation, handledReconcileAt: hr.Annotations[requestedAtAnnotation]}
	if !r.HelmDefaults.KeepWaitOnNewRevision {
		// An uninstall's run (delete.go) never has one: it is not cut short.
		run.superseded = make(chan struct{})
	}
	force := handleRequest(hr, forceAtAnnotation, &hr.Status.LastHandledForceAt)
	reset := handleRequest(hr, resetAtAnnotation, &hr.Status.LastHandledResetAt)
	run.handledForceAt, run.handledResetAt = hr.Status.LastHandledForceAt, hr.Status.LastHandledResetAt
	failures := r.failuresFor(hr, sc.desired, reset || force)
	if !reset && !force {
		if f, ok := r.written.failuresOf(key, run.attempt); ok {
			failures = f
		}
	}
	redactor := sc.redactor
	latest, _, known := r.cachedRecords(ctx, sc.target)
	run.request = helm.Request{
		StorageEmpty: known && latest == nil,
		Target:       sc.target,
		Desired:      sc.desired,
		Spec:         r.withRetryFloor(ctx, hr, hr.Spec.DeepCopy()),
		Failures:     failures,
		Force:        force,
		Redactor:     &redactor,
		ReinstallOnChartNameChange: r.HelmDefaults.ChartNameChangeStrategy(&hr.Spec) ==
			kraanv1.ChartNameChangeStrategyReinstall,
		Apply:          applyMethodsOf(r.HelmDefaults, &hr.Spec),
		WaitSuperseded: run.superseded,
	}
	sc.starting = run
	ctrl.LoggerFrom(ctx).V(1).Info("Starting a Helm run", "attempt", run.attempt)
}

// launchStarted launches the run a reconcile prepared, after its writes:
// the run's progress reports patch from what the reconcile left.
func (r *Reconciler) launchStarted(ctx context.Context, sc *releaseScope) {
	run := sc.starting
	progress := &progressReporter{r: r, sc: &releaseScope{
		hr: sc.hr.DeepCopy(), patcher: sc.patcher.Fork(), desired: sc.desired, target: sc.target, redactor: sc.redactor,
	}}
	// The run outlives the reconcile: its context is the logger's only.
	runCtx := ctrl.LoggerInto(context.Background(), ctrl.LoggerFrom(ctx))
	r.runs.launch(runCtx, r.Engine, run, progress)
}

// attemptOf identifies what a run is for: the generation and the desired
// chart and values.
func attemptOf(hr *kraanv1.HelmRelease, desired helm.Desired) string {
	return strconv.FormatInt(hr.Generation, 10) + "/" + attemptDigest(desired)
}
