package habitat

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/chartbacked"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// ChartConditions are the conditions of a Habitat this controller writes
// that count towards the Ready the chart-backed controller derives: after
// Irreconcilable, before the release's own.
var ChartConditions = []kit.Owned{{Type: habitatv1.SecretsReadyCondition, Failing: metav1.ConditionFalse}}

// readySummary derives a Habitat's Ready, as the chart-backed controller
// does with ChartConditions registered.
var readySummary = chartbacked.Summary(ChartConditions...)

// Keys the chart mounts from the Secrets a Habitat names; keep in sync with
// helm-charts/habitat/templates/statefulset.yaml.
const (
	ringKeyKey  = "ring-key"
	userTOMLKey = "user.toml"
)

// secretRef is a Secret a Habitat names and the key the chart mounts from it.
type secretRef struct {
	field, name, key string
}

// referencedSecrets are the Secrets the spec names; the generated ring key is
// the operator's own and not among them.
func referencedSecrets(h *habitatv1.Habitat) []secretRef {
	var refs []secretRef
	if n := h.Spec.Service.RingSecretName; n != "" {
		refs = append(refs, secretRef{"spec.service.ringSecretName", n, ringKeyKey})
	}
	if n := h.Spec.Service.ConfigSecretName; n != "" {
		refs = append(refs, secretRef{"spec.service.configSecretName", n, userTOMLKey})
	}
	return refs
}

// reconcileSecrets checks that every Secret the spec names exists and holds
// the key the chart mounts. Otherwise the supervisors would start without
// their ring key or configuration (the kubelet only retries the mount), so
// the Habitat is not Ready and says which Secret and key is missing; the
// watch on Secrets brings it back as soon as the Secret appears. Only names
// and keys are read and reported, never values.
func (r *Reconciler) reconcileSecrets(ctx context.Context, sc *habitatScope, obj *habitatv1.Habitat) error {
	// Set once every Secret was read: a condition from half of them would
	// be written by Finish as if it were the whole.
	found := metav1.Condition{Type: habitatv1.SecretsReadyCondition, Status: metav1.ConditionTrue,
		Reason: habitatv1.ReasonSecretsFound, Message: "The Secrets the spec names hold their keys"}
	var problems []string
	reason := ""
	for _, ref := range referencedSecrets(obj) {
		secret := &corev1.Secret{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.name}, secret)
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("Secret %s (%s) does not exist; it must hold key %q", ref.name, ref.field, ref.key))
			reason = habitatv1.ReasonSecretNotFound
		case err != nil:
			return fmt.Errorf("reading Secret %s: %w", ref.name, err)
		case len(secret.Data[ref.key]) == 0:
			problems = append(problems, fmt.Sprintf("Secret %s (%s) has no key %q", ref.name, ref.field, ref.key))
			if reason == "" {
				reason = habitatv1.ReasonSecretKeyMissing
			}
		}
	}
	if len(problems) > 0 {
		found.Status, found.Reason, found.Message = metav1.ConditionFalse, reason, strings.Join(problems, "; ")
	}
	sc.secrets = found
	return nil
}

// requestsForSecretChange enqueues the Habitats of the Secret's namespace that
// name it.
func (r *Reconciler) requestsForSecretChange(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &habitatv1.HabitatList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Habitats for a Secret change")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		for _, ref := range referencedSecrets(&list.Items[i]) {
			if ref.name == obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				break
			}
		}
	}
	return reqs
}

// setSecretsCondition writes SecretsReady and the Ready it implies, and
// records a Warning event when the Secrets went missing.
func (r *Reconciler) setSecretsCondition(obj *habitatv1.Habitat, c metav1.Condition) {
	previousMessage := ""
	if previous := apimeta.FindStatusCondition(obj.Status.Conditions, c.Type); previous != nil {
		previousMessage = previous.Message
	}
	kit.SetCondition(&obj.Status.Conditions, obj.Generation, c.Type, c.Status, c.Reason, c.Message)
	readySummary.SetReady(&obj.Status.Conditions, obj.Generation)
	if c.Status == metav1.ConditionFalse && previousMessage != c.Message {
		r.Events.Warning(obj, c.Reason, c.Message)
	}
}
