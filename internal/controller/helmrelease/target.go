package helmrelease

import (
	"crypto/sha256"
	"encoding/hex"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// Flux's request annotations, so `flux reconcile hr [--force|--reset]`
// habits work. requestedAt asks for a reconcile now. forceAt and resetAt are
// tokens that act only when equal to requestedAt, once each: forceAt upgrades
// a release that is in sync, resetAt resets the failure counters (clearing
// Stalled after exhausted retries).
const (
	requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"
	forceAtAnnotation     = "reconcile.fluxcd.io/forceAt"
	resetAtAnnotation     = "reconcile.fluxcd.io/resetAt"
)

// handleRequest says whether the annotation asks for its action now: set,
// equal to requestedAt and not handled before. Like Flux, it records the
// value as handled whether or not it acts, so a token acts at most once.
func handleRequest(hr *kraanv1.HelmRelease, annotation string, lastHandled *string) bool {
	value, ok := hr.Annotations[annotation]
	if !ok {
		return false
	}
	act := value == hr.Annotations[requestedAtAnnotation] && value != *lastHandled
	*lastHandled = value
	return act
}

// maxReleaseNameLength is Helm's limit: release names end up in label values.
const maxReleaseNameLength = 53

// releaseNameOf is spec.releaseName, or `[targetNamespace-]name` shortened
// with a hash past 53 characters, as Flux does.
func releaseNameOf(hr *kraanv1.HelmRelease) string {
	if hr.Spec.ReleaseName != "" {
		return hr.Spec.ReleaseName
	}
	name := hr.Name
	if hr.Spec.TargetNamespace != "" {
		name = hr.Spec.TargetNamespace + "-" + hr.Name
	}
	if len(name) <= maxReleaseNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
}

// TargetOf is where hr's release lives and, with defaultServiceAccount
// (--default-service-account) when hr names none, as whom the operator acts.
func TargetOf(hr *kraanv1.HelmRelease, defaultServiceAccount string) helm.Target {
	t := helm.Target{
		ReleaseName:      releaseNameOf(hr),
		Namespace:        hr.Namespace,
		StorageNamespace: hr.Namespace,
		FreshClients:     hr.Spec.PersistentClient != nil && !*hr.Spec.PersistentClient,
	}
	if hr.Spec.TargetNamespace != "" {
		t.Namespace = hr.Spec.TargetNamespace
	}
	if hr.Spec.StorageNamespace != "" {
		t.StorageNamespace = hr.Spec.StorageNamespace
	}
	sa := hr.Spec.ServiceAccountName
	if sa == "" {
		sa = defaultServiceAccount
	}
	if sa != "" {
		t.Impersonate = "system:serviceaccount:" + hr.Namespace + ":" + sa
	}
	return t
}

func (r *Reconciler) targetOf(hr *kraanv1.HelmRelease) helm.Target {
	return TargetOf(hr, r.DefaultServiceAccount)
}
