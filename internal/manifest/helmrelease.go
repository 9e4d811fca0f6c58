package manifest

import (
	"errors"
	"fmt"
	"reflect"
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

// helmReleaseSpecFields are the spec fields our HelmRelease supports.
var helmReleaseSpecFields = newFieldTree(reflect.TypeFor[kraanv1.HelmReleaseSpec]())

// refusedFields are Flux fields whose loss would do harm rather than merely
// change behaviour, so a HelmRelease using them is not converted at all.
var refusedFields = []struct {
	path   []string
	reason string
}{
	{[]string{"kubeConfig"}, "the release would be installed in this cluster instead of the remote one"},
	{[]string{"chart", specField, "verify"}, "the chart would be installed without verifying its signature"},
}

// IsFluxHelmRelease reports whether obj is a helm.toolkit.fluxcd.io HelmRelease,
// of any version.
func IsFluxHelmRelease(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == FluxHelmGroup && gvk.Kind == helmReleaseKind
}

// ConvertHelmRelease converts a Flux HelmRelease (v2, v2beta2 or v2beta1) into
// a kraan.io/v1alpha1 HelmRelease with the same name, namespace, labels and
// annotations. Fields our HelmRelease has are carried, after smoothing over the
// differences between Flux versions; the others are dropped and each one is
// reported in a warning ("HelmRelease apps/podinfo: field spec.postRenderers is
// not supported and was ignored"). Status is dropped silently.
//
// It fails for another apiVersion, for a field in refusedFields, for a chartRef
// to anything but an OCIRepository, and for a spec our type cannot hold (a
// string where a number belongs): applying such an object could only fail later
// with a less clear message.
func ConvertHelmRelease(obj *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	name := describe(obj)
	if err := checkConvertible(obj); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	spec, _, err := unstructured.NestedMap(obj.Object, specField)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := normalizeSpec(spec); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	var dropped []string
	converted, _ := helmReleaseSpecFields.prune(spec, specField, &dropped).(map[string]any)
	if err := decodeStrict(converted, &kraanv1.HelmReleaseSpec{}); err != nil {
		return nil, nil, fmt.Errorf("%s: spec cannot be converted: %w", name, err)
	}
	warnings := make([]string, 0, len(dropped))
	for _, path := range dropped {
		warnings = append(warnings, fmt.Sprintf("%s: field %s is not supported and was ignored", name, path))
	}
	return newKraanHelmRelease(obj, converted), warnings, nil
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
	for _, f := range refusedFields {
		if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, append([]string{specField}, f.path...)...); found {
			return fmt.Errorf("field spec.%s is not supported: %s; remove it or keep this release with Flux's helm-controller",
				strings.Join(f.path, "."), f.reason)
		}
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
