package chartbacked

import (
	"context"
	"errors"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/helm"
)

// Operator SDK's annotations, honoured with its meaning so existing custom
// resources behave the same here.
const (
	AnnotationUpgradeForce          = "helm.sdk.operatorframework.io/upgrade-force"
	AnnotationInstallDisableHooks   = "helm.sdk.operatorframework.io/install-disable-hooks"
	AnnotationUpgradeDisableHooks   = "helm.sdk.operatorframework.io/upgrade-disable-hooks"
	AnnotationUninstallDisableHooks = "helm.sdk.operatorframework.io/uninstall-disable-hooks"
	// AnnotationRollbackForce (default true, as Operator SDK) forces the
	// rollback of a failed upgrade.
	AnnotationRollbackForce = "helm.sdk.operatorframework.io/rollback-force"
	// AnnotationUninstallWait keeps the object, on delete, until every object
	// of its release is gone.
	AnnotationUninstallWait = "helm.sdk.operatorframework.io/uninstall-wait"
	// AnnotationReconcilePeriod (a Go duration) overrides the watch's
	// reconcilePeriod for one object.
	AnnotationReconcilePeriod = "helm.sdk.operatorframework.io/reconcile-period"
)

// actionsFor returns the Helm options of obj's release. As Operator SDK,
// actions do not wait for readiness: the release is applied and the dependent
// watches follow the objects. Failed installs are uninstalled and failed
// upgrades rolled back, then retried on the next pass.
//
// A chart-backed release never takes over an object it did not create: a
// tenant's object named like a hand-made StatefulSet of its namespace would
// otherwise replace it. Helm then fails the action with a message naming the
// existing object, and the object is untouched.
func actionsFor(obj client.Object) helm.Actions {
	a := obj.GetAnnotations()
	return helm.Actions{
		Install: helm.InstallOptions{WaitOptions: helm.WaitOptions{
			DisableWait:  true,
			DisableHooks: annotationTrue(a, AnnotationInstallDisableHooks),
		}, DisableTakeOwnership: true},
		Upgrade: helm.UpgradeOptions{
			WaitOptions: helm.WaitOptions{
				DisableWait:  true,
				DisableHooks: annotationTrue(a, AnnotationUpgradeDisableHooks),
			},
			Force:                annotationTrue(a, AnnotationUpgradeForce),
			DisableTakeOwnership: true,
		},
		Rollback: helm.RollbackOptions{Force: annotationBool(a, AnnotationRollbackForce, true)},
		Uninstall: helm.UninstallOptions{
			DisableHooks: annotationTrue(a, AnnotationUninstallDisableHooks),
			DisableWait:  !annotationTrue(a, AnnotationUninstallWait),
		},
		MaxHistory: ptr.To(10),
	}
}

// annotationTrue parses as Operator SDK does: strconv.ParseBool, anything
// invalid is false.
func annotationTrue(annotations map[string]string, key string) bool {
	return annotationBool(annotations, key, false)
}

// annotationBool is annotationTrue for an annotation whose default, when it
// is unset or invalid, is fallback.
func annotationBool(annotations map[string]string, key string, fallback bool) bool {
	v, err := strconv.ParseBool(annotations[key])
	if err != nil {
		return fallback
	}
	return v
}

// annotatedPeriod is the object's reconcile-period annotation, when it is a
// valid positive duration.
func annotatedPeriod(obj client.Object) (time.Duration, bool) {
	d, err := time.ParseDuration(obj.GetAnnotations()[AnnotationReconcilePeriod])
	return d, err == nil && d > 0
}

// periodFor is the object's reconcile-period annotation when it is a valid
// positive duration, raised to the operator's minimum: whoever may annotate
// the object chooses how often its release is looked at, within the floor
// the operator sets (--min-reconcile-interval). Otherwise it is the watch's
// period, set by whoever runs the operator, as it is.
func (r *Reconciler) periodFor(ctx context.Context, obj client.Object) time.Duration {
	if d, ok := annotatedPeriod(obj); ok {
		return r.floor.Apply(ctx, obj, "metadata.annotations."+AnnotationReconcilePeriod, d)
	}
	return r.Watch.ResyncPeriod()
}

// postRenderer refuses a manifest with an object outside the watch's
// bounds, before anything is applied, then gives the rendered objects a
// controller reference to obj.
func (r *Reconciler) postRenderer(obj *unstructured.Unstructured) *helm.BoundsPostRenderer {
	return &helm.BoundsPostRenderer{
		Bounds: r.Watch.Bounds(obj.GetNamespace(), obj.GetName()),
		Mapper: r.Mapper,
		Next:   r.ownerRefs(obj),
	}
}

// ownerRefs gives the rendered objects a controller reference to obj.
func (r *Reconciler) ownerRefs(obj *unstructured.Unstructured) *helm.OwnerRefPostRenderer {
	return &helm.OwnerRefPostRenderer{
		Owner: metav1.OwnerReference{
			APIVersion:         obj.GetAPIVersion(),
			Kind:               obj.GetKind(),
			Name:               obj.GetName(),
			UID:                obj.GetUID(),
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		},
		Namespace: obj.GetNamespace(),
		Mapper:    r.Mapper,
	}
}

// failedActions joins the errors of the run's steps: a stalled run returns no
// error itself, but the controller must back off and report why.
func failedActions(res helm.Result) error {
	errs := make([]error, 0, len(res.Taken))
	for _, s := range res.Taken {
		errs = append(errs, s.Err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return errors.New("the release is stalled after failed actions")
}
