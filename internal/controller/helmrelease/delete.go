package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helmrun"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// namespaceUninstallGrace is how long, after its namespace began to be
// deleted, a release whose uninstall keeps failing for another reason than
// those uninstallBlocker and namespaceLetGo know is retried before it is left
// installed: long enough for an unreachable cluster to come back after a
// blip, short enough that a namespace deletion never waits on us for good.
const namespaceUninstallGrace = 5 * time.Minute

// reconcileDelete uninstalls the release, then lets the object go. The
// release is left installed when the HelmRelease CRD is being deleted (every
// HelmRelease goes with it: see kit.KindBeingRemoved) and, as in Flux, when
// the object is suspended, when
// the identity it would be uninstalled with is gone (the kubeConfig Secret,
// the impersonated ServiceAccount) and, in a namespace being deleted, when
// uninstalling is refused or keeps failing (see uninstallOnDelete).
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *releaseScope) (ctrl.Result, error) {
	hr := sc.hr
	r.repoWatch.Forget(client.ObjectKeyFromObject(hr))
	if !controllerutil.ContainsFinalizer(hr, kraanv1.Finalizer) {
		r.Engine.ForgetCluster(ownerOf(hr))
		sc.deleted = true
		return ctrl.Result{}, nil
	}
	why, kindRemoved, err := kit.KindBeingRemoved(ctx, r.APIReader, helmReleasesResource)
	if err != nil {
		return ctrl.Result{}, outcome.Transient(kraanv1.ReasonUninstallFailed, err)
	}
	switch {
	case kindRemoved:
		r.leaveInstalled(ctx, sc, r.targetOf(hr), why+": the release stays, with its records, for a HelmRelease of the same name to adopt")
	case !hr.Spec.Suspend:
		if err := r.uninstallOnDelete(ctx, sc); err != nil {
			return ctrl.Result{}, err
		}
	}
	base := hr.DeepCopy()
	controllerutil.RemoveFinalizer(hr, kraanv1.Finalizer)
	if err := r.Patch(ctx, hr, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer: %w", err)
	}
	r.Engine.ForgetCluster(ownerOf(hr))
	r.Metrics.forgetRelease(hr.Namespace, hr.Name)
	sc.deleted = true
	return ctrl.Result{}, nil
}

// helmReleasesResource is the resource whose CRD's deletion makes a
// HelmRelease's deletion leave its release installed.
var helmReleasesResource = kraanv1.GroupVersion.WithResource("helmreleases").GroupResource()

// ownerOf names hr as the user of a remote cluster's clients.
func ownerOf(hr *kraanv1.HelmRelease) string {
	return client.ObjectKeyFromObject(hr).String()
}

// uninstallOnDelete uninstalls hr's release; nil as well when it decided to
// leave the release installed, which it reports (leaveInstalled). An error
// retries the deletion with back-off.
func (r *Reconciler) uninstallOnDelete(ctx context.Context, sc *releaseScope) error {
	hr := sc.hr
	target, err := r.resolvedTarget(ctx, hr)
	if apierrors.IsNotFound(err) {
		err = &goneError{what: "kubeConfig Secret " + hr.Namespace + "/" + hr.Spec.KubeConfig.SecretRef.Name}
	}
	if target.Cluster != nil {
		sc.redactor.Add(target.Cluster.Credentials()...)
	}
	if err == nil {
		err = r.serviceAccountGone(ctx, target)
	}
	if why := uninstallBlocker(err); why != "" {
		r.leaveInstalled(ctx, sc, target, why)
		return nil
	}
	if err == nil {
		var started bool
		if started, err = r.uninstallOffWorker(ctx, sc, target); started {
			return outcome.Waiting(kraanv1.ReasonProgressing, 0, fmt.Errorf("uninstalling release %s/%s", target.StorageNamespace, target.ReleaseName))
		}
		if err == nil {
			r.Events.Normal(hr, kraanv1.ReasonUninstallSucceeded, "Release "+target.ReleaseName+" uninstalled")
			return nil
		}
		err = outcome.Transient(kraanv1.ReasonUninstallFailed, err)
	}
	err = sc.redactor.Error(err)
	why, letGo, nsErr := r.namespaceLetGo(ctx, hr, err)
	switch {
	case nsErr != nil:
		return errors.Join(err, nsErr)
	case letGo:
		r.leaveInstalled(ctx, sc, target, why)
		return nil
	}
	return err
}

// uninstallOffWorker uninstalls hr's release in a run outside the workers,
// as installs and upgrades run (see runs): its wait for the release's
// objects to go (spec.uninstall.timeout, of any length) holds no worker, so
// one tenant's slow uninstalls cannot keep every other release from being
// reconciled. The first call starts the run and says so; the run's end
// re-queues the release, whose next call returns the run's outcome.
func (r *Reconciler) uninstallOffWorker(ctx context.Context, sc *releaseScope, target helm.Target) (started bool, err error) {
	key := ctrlKey(sc.hr)
	if done := r.runs.Take(key); done != nil && done.Uninstall != nil {
		_, err := done.Outcome()
		return false, err
	}
	acts := releasespec.ActionsOf(&sc.hr.Spec)
	run := helmrun.NewRun[startedFor](key, sc.hr.Generation, false)
	run.Request = helm.Request{Target: target, Actions: acts}
	run.Uninstall = func(ctx context.Context, pause func() func()) error {
		return r.Engine.UninstallPausing(ctx, target, acts, pause)
	}
	r.runs.Launch(ctx, r.Engine, run)
	return true, nil
}

// goneError is an identity the release would be uninstalled with that does
// not exist any more.
type goneError struct{ what string }

func (e *goneError) Error() string { return e.what + " does not exist" }

// uninstallBlocker says why the release cannot be uninstalled at all, as
// Flux judges it: its kubeConfig Secret or its ServiceAccount is gone, so
// there is nobody left to uninstall it as. "" when err is not that.
func uninstallBlocker(err error) string {
	var gone *goneError
	if errors.As(err, &gone) {
		return gone.Error()
	}
	return ""
}

// serviceAccountGone returns a goneError when the release is uninstalled as
// a ServiceAccount of this cluster that does not exist: impersonating it
// would act as a name whose rights are gone with it (Flux checks the same).
// A remote cluster's kubeconfig carries its own identity.
func (r *Reconciler) serviceAccountGone(ctx context.Context, target helm.Target) error {
	namespace, name, ok := serviceAccountOf(target)
	if !ok || target.Cluster != nil {
		return nil
	}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.ServiceAccount{})
	switch {
	case apierrors.IsNotFound(err):
		return &goneError{what: "ServiceAccount " + namespace + "/" + name}
	case err != nil:
		return outcome.Transient(kraanv1.ReasonUninstallFailed, fmt.Errorf("reading ServiceAccount %s/%s: %w", namespace, name, err))
	}
	return nil
}

// serviceAccountOf splits the impersonated user of target,
// system:serviceaccount:<namespace>:<name>.
func serviceAccountOf(target helm.Target) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(target.Impersonate, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok
}

// namespaceLetGo says whether a release whose uninstall failed with err is
// left installed because its namespace is being deleted: at once when the
// uninstall was refused (the namespace's RoleBindings and Secrets go away
// in any order, so the ServiceAccount may no longer read the release's
// records), after namespaceUninstallGrace for any other failure. A
// namespace deletion thus never waits on us for good.
func (r *Reconciler) namespaceLetGo(ctx context.Context, hr *kraanv1.HelmRelease, err error) (string, bool, error) {
	ns := &corev1.Namespace{}
	if getErr := r.APIReader.Get(ctx, client.ObjectKey{Name: hr.Namespace}, ns); getErr != nil {
		if apierrors.IsNotFound(getErr) {
			return "namespace " + hr.Namespace + " is gone", true, nil
		}
		return "", false, fmt.Errorf("reading namespace %s: %w", hr.Namespace, getErr)
	}
	deleting := ns.DeletionTimestamp
	switch {
	case deleting.IsZero():
		return "", false, nil
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return fmt.Sprintf("namespace %s is being deleted and uninstalling was refused: %v", hr.Namespace, err), true, nil
	case time.Since(deleting.Time) > namespaceUninstallGrace:
		return fmt.Sprintf("namespace %s is being deleted and uninstalling failed for %s: %v",
			hr.Namespace, namespaceUninstallGrace, err), true, nil
	}
	return "", false, nil
}

// leaveInstalled lets the object go without uninstalling its release, and
// says so in the Stalled condition and a Warning event: what the release
// installed stays where it is, for its owner to remove.
func (r *Reconciler) leaveInstalled(ctx context.Context, sc *releaseScope, target helm.Target, why string) {
	hr := sc.hr
	msg := sc.redactor.String(fmt.Sprintf("HelmRelease %s/%s deleted without uninstalling release %s/%s, whose objects stay in place: %s",
		hr.Namespace, hr.Name, target.StorageNamespace, target.ReleaseName, why))
	setCondition(hr, kraanv1.StalledCondition, metav1.ConditionTrue, kraanv1.ReasonUninstallSkipped, msg)
	summarize(hr)
	if err := sc.patcher.Patch(ctx, hr); err != nil && !apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Error(err, "Reporting the skipped uninstall")
	}
	r.Events.Warning(hr, kraanv1.ReasonUninstallSkipped, msg)
	ctrl.LoggerFrom(ctx).Info("Leaving the release installed", "release", target.StorageNamespace+"/"+target.ReleaseName, "why", msg)
}
