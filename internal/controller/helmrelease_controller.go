package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// ChartGetter returns the chart a HelmRelease asks for and the digest of its
// content.
type ChartGetter interface {
	GetChart(ctx context.Context, hr *kraanv1.HelmRelease) (*chart.Chart, string, error)
}

// HelmReleaseReconciler installs and keeps HelmReleases in sync with the
// embedded Helm engine.
type HelmReleaseReconciler struct {
	client.Client
	// APIReader reads ConfigMaps and Secrets uncached: the operator watches
	// only their metadata, so it does not hold every Secret of the cluster in memory.
	APIReader client.Reader
	Engine    *helm.Engine
	Charts    ChartGetter
	Recorder  events.EventRecorder
	// DefaultServiceAccount is impersonated when a HelmRelease names none
	// (--default-service-account), to lock tenants down.
	DefaultServiceAccount string
	Metrics               *Metrics
}

// dependencyRetry is how often a release waiting on dependencies is looked at
// again besides the watch on them: a safety net, not the trigger.
const dependencyRetry = 5 * time.Minute

// chartRetry is how soon a chart that could not be fetched is tried again.
const chartRetry = 30 * time.Second

// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kraan.io,resources=helmreleases/finalizers,verbs=update
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories;gitrepositories;ocirepositories;buckets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// Helm installs arbitrary charts: the operator needs every verb on every
// resource, unless releases run as a service account (serviceAccountName).
// +kubebuilder:rbac:groups=*,resources=*,verbs=*

// Reconcile brings one HelmRelease towards its desired state.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	hr := &kraanv1.HelmRelease{}
	// A fresh read: the failure counters in status decide retries, and a
	// cached copy may not yet show what the previous pass wrote.
	if err := r.APIReader.Get(ctx, req.NamespacedName, hr); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forgetRelease(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch := client.MergeFrom(hr.DeepCopy())
	defer func() {
		if err := r.patchStatus(ctx, hr, patch, retErr); err != nil && retErr == nil {
			retErr = err
		}
	}()

	if !hr.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, hr)
	}
	if !controllerutil.ContainsFinalizer(hr, kraanv1.Finalizer) {
		if err := r.addFinalizer(ctx, hr); err != nil {
			return ctrl.Result{}, err
		}
	}
	if hr.Spec.Suspend {
		ctrl.LoggerFrom(ctx).V(1).Info("Reconciliation is suspended")
		return ctrl.Result{}, nil
	}
	if res := r.reconcileDependencies(ctx, hr); !res.IsZero() {
		return res, nil
	}
	return r.reconcileRelease(ctx, hr)
}

func (r *HelmReleaseReconciler) addFinalizer(ctx context.Context, hr *kraanv1.HelmRelease) error {
	base := hr.DeepCopy()
	controllerutil.AddFinalizer(hr, kraanv1.Finalizer)
	if err := r.Patch(ctx, hr, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("adding the finalizer: %w", err)
	}
	return nil
}

// reconcileDependencies waits until every HelmRelease of spec.dependsOn is
// Ready at its current generation. The watch on HelmReleases re-queues this
// one as soon as a dependency turns Ready.
func (r *HelmReleaseReconciler) reconcileDependencies(ctx context.Context, hr *kraanv1.HelmRelease) ctrl.Result {
	for _, dep := range hr.Spec.DependsOn {
		key := client.ObjectKey{Namespace: dep.Namespace, Name: dep.Name}
		if key.Namespace == "" {
			key.Namespace = hr.Namespace
		}
		if msg := r.dependencyNotReady(ctx, key); msg != "" {
			setNotReady(hr, kraanv1.ReasonDependencyNotReady, msg)
			return ctrl.Result{RequeueAfter: dependencyRetry}
		}
	}
	return ctrl.Result{}
}

func (r *HelmReleaseReconciler) dependencyNotReady(ctx context.Context, key client.ObjectKey) string {
	dep := &kraanv1.HelmRelease{}
	if err := r.Get(ctx, key, dep); err != nil {
		return fmt.Sprintf("waiting for HelmRelease %s: %v", key, client.IgnoreNotFound(err))
	}
	if dep.Status.ObservedGeneration != dep.Generation || !isReady(dep.Status.Conditions) {
		return fmt.Sprintf("waiting for HelmRelease %s to be Ready", key)
	}
	return ""
}

// reconcileRelease gets the chart and values and lets the engine bring the
// release in line with them.
func (r *HelmReleaseReconciler) reconcileRelease(ctx context.Context, hr *kraanv1.HelmRelease) (ctrl.Result, error) {
	chrt, digest, err := r.Charts.GetChart(ctx, hr)
	if err != nil {
		setNotReady(hr, kraanv1.ReasonArtifactFailed, err.Error())
		r.event(hr, "Warning", kraanv1.ReasonArtifactFailed, err.Error())
		return ctrl.Result{RequeueAfter: chartRetry}, nil
	}
	values, err := r.composeValues(ctx, hr)
	if err != nil {
		// A missing or broken ConfigMap/Secret: the watch on it retries.
		setNotReady(hr, kraanv1.ReasonValuesError, err.Error())
		r.event(hr, "Warning", kraanv1.ReasonValuesError, err.Error())
		return ctrl.Result{}, nil
	}
	desired := helm.Desired{Chart: chrt, ChartDigest: digest, Values: values}
	failures := r.failuresFor(hr, desired)
	res, runErr := r.Engine.Run(ctx, helm.Request{
		Target:   r.targetOf(hr),
		Desired:  desired,
		Spec:     &hr.Spec,
		Failures: failures,
	})
	r.recordRun(hr, desired, res, runErr)
	if runErr == nil && res.Next == helm.ActionNone {
		if err := r.reconcileDrift(ctx, hr, res); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case runErr != nil:
		return ctrl.Result{}, runErr
	case res.Next != helm.ActionNone && res.Next != helm.ActionStalled:
		// The engine took its maximum of steps in this pass; go on at once.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	default:
		return ctrl.Result{RequeueAfter: hr.Spec.Interval.Duration}, nil
	}
}

// failuresFor returns the failure counters that apply to desired: they start
// again from zero whenever the chart, the values or the spec changed, or a
// reconcile was requested with the reconcile.fluxcd.io/requestedAt annotation.
func (r *HelmReleaseReconciler) failuresFor(hr *kraanv1.HelmRelease, desired helm.Desired) helm.Failures {
	s := &hr.Status
	changed := s.LastAttemptedRevision != desired.Chart.Metadata.Version ||
		s.LastAttemptedValuesChecksum != attemptDigest(desired) ||
		s.LastAttemptedGeneration != hr.Generation ||
		hr.Annotations[requestedAtAnnotation] != s.LastHandledReconcileAt
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

// reconcileDelete uninstalls the release, then lets the object go. A
// suspended release is left installed, as Flux does.
func (r *HelmReleaseReconciler) reconcileDelete(ctx context.Context, hr *kraanv1.HelmRelease) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(hr, kraanv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	if !hr.Spec.Suspend {
		if err := r.Engine.Uninstall(ctx, r.targetOf(hr), &hr.Spec); err != nil {
			setNotReady(hr, kraanv1.ReasonUninstallFailed, err.Error())
			r.event(hr, "Warning", kraanv1.ReasonUninstallFailed, err.Error())
			return ctrl.Result{}, err
		}
		r.event(hr, "Normal", kraanv1.ReasonUninstallSucceeded, "Release "+r.targetOf(hr).ReleaseName+" uninstalled")
	}
	base := hr.DeepCopy()
	controllerutil.RemoveFinalizer(hr, kraanv1.Finalizer)
	if err := r.Patch(ctx, hr, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer: %w", err)
	}
	r.Metrics.forgetRelease(hr.Namespace, hr.Name)
	return ctrl.Result{}, nil
}

// reconcileDrift compares an in-sync release with the cluster, when
// spec.driftDetection asks for it, and corrects it in mode enabled.
func (r *HelmReleaseReconciler) reconcileDrift(ctx context.Context, hr *kraanv1.HelmRelease, res helm.Result) error {
	dd := hr.Spec.DriftDetection
	if dd == nil || dd.Mode == "" || dd.Mode == kraanv1.DriftDetectionDisabled || res.Latest == nil {
		apimeta.RemoveStatusCondition(&hr.Status.Conditions, kraanv1.DriftedCondition)
		return nil
	}
	report, err := r.Engine.CheckDrift(ctx, r.targetOf(hr), res.Latest, &hr.Spec)
	if err != nil {
		return err
	}
	setDriftCondition(hr, report)
	if len(report.Drifted) > 0 {
		reason, eventType := kraanv1.ReasonDriftDetected, "Warning"
		if report.Corrected {
			reason, eventType = kraanv1.ReasonDriftCorrected, "Normal"
		}
		r.event(hr, eventType, reason, report.Message())
	}
	return nil
}
