package helmrelease

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helmrun"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// A HelmRelease's Helm runs go on outside the workers (internal/helmrun):
// a reconcile starts one and returns; the run's end re-queues the release,
// whose next reconcile records what Helm did.

// startedFor is what a HelmRelease's run was started for, recorded on the
// release when the run has ended.
type startedFor struct {
	desired        helm.Desired
	sourceRevision string
	// handled are the reconcile, force and reset requests the run answers.
	handledReconcileAt, handledForceAt, handledResetAt string
}

// run is one Helm run of a HelmRelease.
type run = helmrun.Run[startedFor]

// DefaultRunGracePeriod is how long, once the operator is told to stop, the
// Helm actions in flight get to finish (--helm-run-grace-period).
const DefaultRunGracePeriod = helmrun.DefaultGracePeriod

// newRuns returns the HelmReleases' runs, whose pacing numbers go to metrics.
func newRuns(opts Options, metrics *Metrics) *helmrun.Runs[startedFor] {
	return helmrun.New[startedFor](helmrun.Options{
		Workers:     opts.MaxConcurrentReconciles,
		Grace:       opts.runGracePeriod(),
		MaxRollouts: opts.MaxConcurrentRollouts,
		Object: func(key types.NamespacedName) client.Object {
			hr := &kraanv1.HelmRelease{}
			hr.Namespace, hr.Name = key.Namespace, key.Name
			return hr
		},
		OnPacing: metrics.setRollouts,
	})
}

func ctrlKey(hr *kraanv1.HelmRelease) types.NamespacedName {
	return types.NamespacedName{Namespace: hr.Namespace, Name: hr.Name}
}

// statusDigest identifies the status hr was written with (helmrun.WriteLog).
func statusDigest(hr *kraanv1.HelmRelease) string {
	data, _ := json.Marshal(&hr.Status)
	sum := sha256.Sum256(data)
	return string(sum[:])
}

// startRun prepares the run of the release's desired state; Finish launches
// it once the reconcile's own writes are done.
func (r *Reconciler) startRun(ctx context.Context, sc *releaseScope) {
	hr := sc.hr
	key := ctrlKey(hr)
	// An uninstall's run (delete.go) is never interruptible: it is not cut short.
	run := helmrun.NewRun[startedFor](key, hr.Generation, !r.HelmDefaults.KeepWaitOnNewRevision)
	run.Attempt = attemptOf(hr, sc.desired)
	run.For = startedFor{desired: sc.desired, sourceRevision: sc.sourceRevision,
		handledReconcileAt: hr.Annotations[requestedAtAnnotation]}
	force := handleRequest(hr, forceAtAnnotation, &hr.Status.LastHandledForceAt)
	reset := handleRequest(hr, resetAtAnnotation, &hr.Status.LastHandledResetAt)
	run.For.handledForceAt, run.For.handledResetAt = hr.Status.LastHandledForceAt, hr.Status.LastHandledResetAt
	failures := r.failuresFor(hr, sc.desired, reset || force)
	if !reset && !force {
		if f, ok := r.runs.Written.FailuresOf(key, run.Attempt); ok {
			failures = f
		}
	}
	redactor := sc.redactor
	latest, _, known := r.cachedRecords(ctx, sc.target)
	run.Request = helm.Request{
		StorageEmpty: known && latest == nil,
		Target:       sc.target,
		Desired:      sc.desired,
		Actions:      releasespec.ActionsOf(r.withRetryFloor(ctx, hr, hr.Spec.DeepCopy())),
		Failures:     failures,
		Force:        force,
		Redactor:     &redactor,
		ReinstallOnChartNameChange: r.HelmDefaults.ChartNameChangeStrategy(&hr.Spec) ==
			kraanv1.ChartNameChangeStrategyReinstall,
		Apply:          applyMethodsOf(r.HelmDefaults, &hr.Spec),
		WaitSuperseded: run.Superseded(),
	}
	sc.starting = run
	ctrl.LoggerFrom(ctx).V(1).Info("Starting a Helm run", "attempt", run.Attempt)
}

// launchStarted launches the run a reconcile prepared, after its writes:
// the run's progress reports patch from what the reconcile left, on a copy
// of the release of their own (the worker has moved on).
func (r *Reconciler) launchStarted(ctx context.Context, sc *releaseScope) {
	run := sc.starting
	progress := &releaseScope{
		hr: sc.hr.DeepCopy(), patcher: sc.patcher.Fork(), desired: sc.desired, target: sc.target, redactor: sc.redactor,
	}
	run.Report = func(ctx context.Context, action helm.Action) {
		r.reportProgress(ctx, progress, action)
		r.runs.Written.Wrote(ctrlKey(progress.hr), statusDigest(progress.hr))
	}
	r.runs.Launch(ctx, r.Engine, run)
}

// attemptOf identifies what a run is for: the generation and the desired
// chart and values.
func attemptOf(hr *kraanv1.HelmRelease, desired helm.Desired) string {
	return strconv.FormatInt(hr.Generation, 10) + "/" + attemptDigest(desired)
}
