package helmrelease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/redact"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
	"github.com/kraan-io/kraan-operator/internal/rollout"
	"github.com/kraan-io/kraan-operator/internal/tenancy"
)

// releaseScope carries what one reconcile observed, step by step.
type releaseScope struct {
	hr      *kraanv1.HelmRelease
	patcher *kit.Patcher

	// reconcileChart and reconcileValues: the desired chart and values.
	desired helm.Desired
	// sourceRevision is what reconcileChart resolved the chart from.
	sourceRevision string
	// target is where the release lives (reconcileTarget).
	target helm.Target

	// reconcileRelease: what the engine did; ran is false when no run
	// ended before this reconcile.
	run    helm.Result
	runErr error
	ran    bool
	// starting is the run this reconcile starts, launched by Finish.
	starting *run
	// queued is set when the run waits in the rollout queue for a slot.
	queued bool

	// suspended and deleted end the reconcile without a summary of their own.
	suspended bool
	deleted   bool

	// redactor masks the values that came from valuesFrom Secrets
	// (reconcileValues) in every message, event and log line.
	redactor redact.Redactor
}

// reconcileDependencies waits until every HelmRelease of spec.dependsOn is
// Ready at its current generation, or, for one with a readyExpr, until the
// expression is true. The watch on HelmReleases re-queues this one as soon
// as a dependency changes.
func (r *Reconciler) reconcileDependencies(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	hr := sc.hr
	if field := tenantReadsAcross(hr, r.Tenancy.IdentityOf(hr)); field != "" {
		return ctrl.Result{}, outcome.Terminal(kraanv1.ReasonAccessDenied, fmt.Errorf(
			"%s reads a HelmRelease of another namespace, which only a platform release may: "+
				"this one acts as a ServiceAccount of its namespace; drop readyExpr (the dependency's Ready condition is then read)", field))
	}
	for i, dep := range hr.Spec.DependsOn {
		key := client.ObjectKey{Namespace: dep.Namespace, Name: dep.Name}
		if key.Namespace == "" {
			key.Namespace = hr.Namespace
		}
		err := r.dependencyNotReady(ctx, hr, key, dep.ReadyExpr, fmt.Sprintf("spec.dependsOn[%d].readyExpr", i))
		var invalid *rollout.HealthCheckError
		switch {
		case errors.As(err, &invalid):
			return ctrl.Result{}, outcome.Terminal(kraanv1.ReasonInvalidCELExpression, err)
		case err != nil:
			return ctrl.Result{}, outcome.Waiting(kraanv1.ReasonDependencyNotReady, r.DependencyRequeue, err)
		}
	}
	return ctrl.Result{}, nil
}

// tenantReadsAcross returns the first readyExpr of a dependency in another
// namespace when hr is a tenant's (it acts as a ServiceAccount): an
// expression is an oracle over every field of the object it reads, so a
// tenant's may read only its own namespace's releases, whatever
// --no-cross-namespace-refs says. Platform releases (acting as the
// operator) may read any.
func tenantReadsAcross(hr *kraanv1.HelmRelease, id tenancy.Identity) string {
	if id.ServiceAccount == "" {
		return ""
	}
	for i, dep := range hr.Spec.DependsOn {
		if dep.ReadyExpr != "" && dep.Namespace != "" && dep.Namespace != hr.Namespace {
			return fmt.Sprintf("spec.dependsOn[%d].readyExpr", i)
		}
	}
	return ""
}

// dependencyNotReady says why the dependency key is not ready, or nil: by
// readyExpr when it is set (Flux's meaning: it replaces the built-in check),
// else Ready=True at its generation.
func (r *Reconciler) dependencyNotReady(ctx context.Context, hr *kraanv1.HelmRelease, key client.ObjectKey, readyExpr, field string) error {
	dep := &kraanv1.HelmRelease{}
	err := r.Get(ctx, key, dep)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("waiting for HelmRelease %s, which does not exist", key)
	case err != nil:
		return fmt.Errorf("waiting for HelmRelease %s: %w", key, err)
	case readyExpr != "":
		return readyByExpr(ctx, hr, dep, readyExpr, field)
	case dep.Status.ObservedGeneration != dep.Generation || !isReady(dep):
		return fmt.Errorf("waiting for HelmRelease %s to be Ready", key)
	}
	return nil
}

// readyByExpr evaluates a dependency's readyExpr with the dependency as
// `dep` and the dependent as `self`, as Flux binds them.
func readyByExpr(ctx context.Context, hr, dep *kraanv1.HelmRelease, readyExpr, field string) error {
	vars := map[string]any{}
	for name, obj := range map[string]*kraanv1.HelmRelease{"dep": dep, "self": hr} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u["apiVersion"], u["kind"] = kraanv1.GroupVersion.String(), "HelmRelease"
		vars[name] = u
	}
	ready, err := rollout.EvalBool(ctx, field, readyExpr, vars)
	switch {
	case err != nil:
		return fmt.Errorf("waiting for HelmRelease %s: %w", client.ObjectKeyFromObject(dep), err)
	case !ready:
		return fmt.Errorf("waiting for HelmRelease %s: %s is false", client.ObjectKeyFromObject(dep), field)
	}
	return nil
}

// reconcileTarget says where the release lives: this cluster, or the remote
// one of spec.kubeConfig.
func (r *Reconciler) reconcileTarget(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	target, err := r.resolvedTarget(ctx, sc.hr)
	if target.Cluster == nil {
		// No remote cluster (any more, or its Secret is unusable): the
		// clients of the one it used stop unless another release uses them.
		r.Engine.ForgetCluster(ownerOf(sc.hr))
	}
	if err != nil {
		err = sc.redactor.Error(err)
		r.Events.Warning(sc.hr, kraanv1.ReasonKubeConfigError, err.Error())
		return ctrl.Result{}, err
	}
	if target.Cluster != nil {
		sc.redactor.Add(target.Cluster.Credentials()...)
	}
	sc.target = target
	return ctrl.Result{}, nil
}

// reconcileChart gets the chart. A chart or version the source does not have
// stalls the release until the spec or the source changes (repoWatch watches
// a HelmRepository's index for it, and the source watches the other kinds); a
// source that cannot be reached is retried with back-off.
func (r *Reconciler) reconcileChart(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(sc.hr)
	repo, fromRepository := helmRepositoryOf(sc.hr)
	got, err := r.Charts.GetChart(ctx, sc.hr)
	if err == nil {
		sc.sourceRevision = got.SourceRevision
		sc.desired = helm.Desired{Chart: got.Chart, ChartDigest: got.Digest, PostRenderersDigest: releasespec.PostRenderersDigest(&sc.hr.Spec)}
		if fromRepository {
			r.repoWatch.Track(ctx, key, repo, chartUseOf(sc.hr, sc.desired.ChartVersion()))
		} else {
			r.repoWatch.Forget(key)
		}
		return ctrl.Result{}, nil
	}
	err = sc.redactor.Error(releasespec.ClassifyChartError(err))
	if fromRepository && outcome.Classify(err) == outcome.ClassTerminal {
		r.repoWatch.Track(ctx, key, repo, chartUseOf(sc.hr, ""))
	}
	r.Events.Warning(sc.hr, kraanv1.ReasonArtifactFailed, err.Error())
	return ctrl.Result{}, err
}

// chartUseOf is what hr asks of its HelmRepository, and the version it got
// ("" when it got none).
func chartUseOf(hr *kraanv1.HelmRelease, version string) chartUse {
	spec := hr.Spec.Chart.Spec
	return chartUse{chart: spec.Chart, constraint: spec.Version, version: version}
}

// helmRepositoryOf is the HelmRepository the release's chart comes from.
func helmRepositoryOf(hr *kraanv1.HelmRelease) (client.ObjectKey, bool) {
	if hr.Spec.ChartRef != nil || hr.Spec.Chart == nil || hr.Spec.Chart.Spec.SourceRef == nil ||
		hr.Spec.Chart.Spec.SourceRef.Kind != sourcev1.HelmRepositoryKind {
		return client.ObjectKey{}, false
	}
	ref := hr.Spec.Chart.Spec.SourceRef
	return releasespec.Namespaced(ref.Namespace, hr.Namespace, ref.Name), true
}

// reconcileValues composes the values and checks them against the chart's
// schema before any Helm action: values the chart rejects are the user's to
// fix, not a failed install to retry and remediate.
func (r *Reconciler) reconcileValues(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	values, err := releasespec.ComposeValues(ctx, r.APIReader, sc.hr, &sc.redactor)
	if err == nil && releasespec.SchemaValidated(&sc.hr.Spec) {
		err = helm.ValidateValues(sc.desired.Chart, values)
	}
	var valuesErr *helm.ValuesError
	var invalid *helm.InvalidValuesError
	switch {
	case errors.As(err, &valuesErr), errors.As(err, &invalid):
		// A missing or broken ConfigMap/Secret: the watch on it brings the
		// release back when it changes.
		err = outcome.Terminal(kraanv1.ReasonValuesError, err)
	case err != nil:
		err = outcome.Transient(kraanv1.ReasonValuesError, err)
	}
	if err != nil {
		err = sc.redactor.Error(err)
		r.Events.Warning(sc.hr, kraanv1.ReasonValuesError, err.Error())
		return ctrl.Result{}, err
	}
	sc.desired.Values = values
	return ctrl.Result{}, nil
}

// reconcileRelease brings the release in line with the desired chart and
// values. Helm runs outside the workers (see runs): this step records what an
// ended run did and starts the next one when the release is not in sync.
func (r *Reconciler) reconcileRelease(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	hr := sc.hr
	key := ctrlKey(hr)
	if done := r.runs.Take(key); done != nil {
		sc.run, sc.runErr = done.Outcome()
		sc.ran = true
		r.recordRun(sc, done)
		r.runs.Written.RecordFailures(key, done.Attempt, sc.run.Failures)
		requested := hr.Annotations[requestedAtAnnotation] != done.For.handledReconcileAt
		if done.Attempt == attemptOf(hr, sc.desired) && !requested {
			return r.runOutcome(ctx, sc)
		}
		// The spec, the chart or the values changed while Helm ran, or a
		// reconcile was requested after the run began (the reconcile it
		// triggered found the run going on): go on at once, so the request
		// is answered by a run that saw it.
	} else if r.inSync(ctx, sc) {
		hr.Status.LastHandledReconcileAt = hr.Annotations[requestedAtAnnotation]
		return ctrl.Result{}, nil
	}
	if err := r.awaitFluxHandover(ctx, sc.hr.Namespace, sc.target); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.admitRollout(sc); err != nil {
		return ctrl.Result{}, err
	}
	r.startRun(ctx, sc)
	return ctrl.Result{}, nil
}

// runOutcome turns how a run ended into the step's result.
func (r *Reconciler) runOutcome(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	switch {
	case sc.runErr != nil:
		return ctrl.Result{}, classifyRunError(sc.runErr)
	case sc.run.Next == helm.ActionStalled:
		// Retries are exhausted: only a new spec, values or a reconcile
		// request (all of which trigger a reconcile) tries again.
		return ctrl.Result{}, outcome.Terminal(kraanv1.ReasonRetriesExceeded, errors.New(stalledMessage(sc)))
	case sc.run.Next != helm.ActionNone:
		// The engine took its maximum of steps in that run; go on at once.
		r.startRun(ctx, sc)
	}
	return ctrl.Result{}, nil
}

// classifyRunError: an action the impersonated service account may not take
// is the user's to fix (its RBAC); anything else is retried with back-off.
func classifyRunError(err error) error {
	var later *helm.RetryLater
	if errors.As(err, &later) {
		// RetryOnFailure: no back-off, the strategy's interval.
		return outcome.Waiting(kraanv1.ReasonRetryOnFailure, later.After, err)
	}
	var unjudgeable *rollout.HealthCheckError
	if errors.As(err, &unjudgeable) {
		// A health check expression cannot judge an object: the
		// expression must change, retrying gives the same answer.
		return outcome.Terminal(kraanv1.ReasonInvalidCELExpression, err)
	}
	if apierrors.IsForbidden(err) {
		// The message names the verb, the resource and the service account.
		return outcome.Terminal(kraanv1.ReasonAccessDenied, err)
	}
	return outcome.Transient(kraanv1.ReasonReconcileError, err)
}

// reconcileDrift compares an in-sync release with the cluster, when
// spec.driftDetection asks for it, and corrects it in mode enabled.
func (r *Reconciler) reconcileDrift(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	hr := sc.hr
	dd := hr.Spec.DriftDetection
	if sc.starting != nil {
		return ctrl.Result{}, nil // checked when the run has ended
	}
	latest := sc.run.LatestRevision(sc.desired)
	if dd == nil || dd.Mode == "" || dd.Mode == kraanv1.DriftDetectionDisabled || latest == nil {
		apimeta.RemoveStatusCondition(&hr.Status.Conditions, kraanv1.DriftedCondition)
		return ctrl.Result{}, nil
	}
	report, err := r.Engine.CheckDrift(ctx, sc.target, latest, releasespec.DriftOf(&hr.Spec))
	if err != nil {
		return ctrl.Result{}, outcome.Transient(kraanv1.ReasonReconcileError, err)
	}
	setDriftCondition(hr, report)
	switch {
	case len(report.Drifted) == 0:
	case report.Corrected:
		r.Events.Normal(hr, kraanv1.ReasonDriftCorrected, report.Message())
	default:
		r.Events.Warning(hr, kraanv1.ReasonDriftDetected, report.Message())
	}
	return ctrl.Result{}, nil
}

// failuresFor returns the failure counters that apply to desired: they start
// again from zero whenever the chart, the values or the spec changed, or
// reset is asked (reconcile.fluxcd.io/resetAt or forceAt).
func (r *Reconciler) failuresFor(hr *kraanv1.HelmRelease, desired helm.Desired, reset bool) helm.Failures {
	s := &hr.Status
	changed := s.LastAttemptedRevision != desired.ChartVersion() ||
		s.LastAttemptedValuesChecksum != attemptDigest(desired) ||
		s.LastAttemptedGeneration != hr.Generation || reset
	if changed {
		return helm.Failures{}
	}
	return helm.Failures{Install: int(s.InstallFailures), Upgrade: int(s.UpgradeFailures)}
}

// attemptDigest identifies a desired chart content and values together.
func attemptDigest(d helm.Desired) string {
	sum := sha256.Sum256([]byte(d.ChartDigest + "\n" + helm.ValuesDigest(d.Values)))
	return "sha256:" + hex.EncodeToString(sum[:])
}
