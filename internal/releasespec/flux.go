package releasespec

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// FluxHelmReleases is the list kind of Flux helm-controller's HelmRelease.
const FluxHelmReleases = "HelmReleaseList"

// FluxHelmReleaseGroupVersion is the API of Flux helm-controller's
// HelmRelease the operator reads.
const FluxHelmReleaseGroupVersion = "helm.toolkit.fluxcd.io/v2"

// FluxRelease is the Helm release a Flux helm-controller HelmRelease
// manages, named as Flux names it (the same fields and defaults as ours),
// and whether helm-controller acts on it: not suspended, or being deleted
// (its finalizer uninstalls the release).
func FluxRelease(obj *unstructured.Unstructured) (releaseName, storageNamespace string, active bool) {
	str := func(field string) string {
		v, _, _ := unstructured.NestedString(obj.Object, "spec", field)
		return v
	}
	suspended, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
	hr := &kraanv1.HelmRelease{}
	hr.Name, hr.Namespace = obj.GetName(), obj.GetNamespace()
	hr.Spec.ReleaseName, hr.Spec.TargetNamespace, hr.Spec.StorageNamespace = str("releaseName"), str("targetNamespace"), str("storageNamespace")
	t := TargetOf(hr, "")
	return t.ReleaseName, t.StorageNamespace, !suspended || obj.GetDeletionTimestamp() != nil
}
