package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

const (
	helmReleaseKind = "HelmRelease"
	specField       = "spec"
	// FluxHelmGroup is the API group of Flux's helm-controller.
	FluxHelmGroup = "helm.toolkit.fluxcd.io"
	// ConvertedFromAnnotation on a converted HelmRelease records the Flux
	// apiVersion it was written as, so a user who wrote a Flux HelmRelease can
	// tell why a kraan.io one exists.
	ConvertedFromAnnotation = "kraan.io/converted-from"
)

// FluxHelmReleaseVersions are the Flux HelmRelease versions ConvertHelmRelease
// accepts: the ones Kraan decoded.
var FluxHelmReleaseVersions = []string{"v2", "v2beta2", "v2beta1"}

// IsFluxHelmRelease reports whether obj is a helm.toolkit.fluxcd.io HelmRelease,
// of any version.
func IsFluxHelmRelease(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == FluxHelmGroup && gvk.Kind == helmReleaseKind
}

// ConvertHelmRelease converts a Flux HelmRelease (v2, v2beta2 or v2beta1) into
// a kraan.io/v1alpha1 HelmRelease with the same name, namespace, labels and
// annotations. Fields are carried, after smoothing over the differences
// between Flux versions; status is dropped.
//
// Nothing else is dropped: a field in RefusedFields, a field our HelmRelease
// does not have (a newer Flux's, or a typo), a chartRef to anything but an
// OCIRepository, or a spec our type cannot hold (a string where a number
// belongs) fails the conversion with a message naming every such field.
// Deploying without them would deploy something other than what Flux deploys.
func ConvertHelmRelease(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	name := describe(obj)
	if err := checkConvertible(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	spec, _, err := unstructured.NestedMap(obj.Object, specField)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if refused := refusedIn(spec); len(refused) > 0 {
		return nil, fmt.Errorf("%s: %s; remove it or keep this release with Flux's helm-controller", name, strings.Join(refused, "; "))
	}
	if err := normalizeSpec(spec); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var unknown []string
	helmReleaseSpecFields.prune(spec, specField, &unknown)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: field %s is not supported (%s): kraan-operator implements the fields of Flux helm-controller v1.4; remove it or keep this release with Flux's helm-controller",
			name, strings.Join(unknown, ", "), UnsupportedField)
	}
	if err := decodeStrict(spec, &kraanv1.HelmReleaseSpec{}); err != nil {
		return nil, fmt.Errorf("%s: spec cannot be converted: %w", name, err)
	}
	return newKraanHelmRelease(obj, spec), nil
}

func checkConvertible(obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	if !IsFluxHelmRelease(obj) {
		return fmt.Errorf("%s is not a Flux HelmRelease", gvk)
	}
	if !slices.Contains(FluxHelmReleaseVersions, gvk.Version) {
		return fmt.Errorf("apiVersion %s is not supported: use %s/v2", obj.GetAPIVersion(), FluxHelmGroup)
	}
	if _, ok := obj.Object[specField].(map[string]any); !ok {
		return errors.New("spec is missing or not a mapping")
	}
	return nil
}

func newKraanHelmRelease(flux *unstructured.Unstructured, spec map[string]any) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{specField: spec}}
	out.SetAPIVersion(kraanv1.GroupVersion.String())
	out.SetKind(helmReleaseKind)
	out.SetName(flux.GetName())
	out.SetNamespace(flux.GetNamespace())
	if labels := flux.GetLabels(); len(labels) > 0 {
		out.SetLabels(labels)
	}
	annotations := flux.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ConvertedFromAnnotation] = flux.GetAPIVersion()
	out.SetAnnotations(annotations)
	return out
}
