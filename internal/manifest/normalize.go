package manifest

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// normalizeSpec rewrites, in place, Flux fields that have a supported
// equivalent in our HelmRelease, so that they are carried rather than dropped.
func normalizeSpec(spec map[string]any) error {
	for _, step := range []func(map[string]any) error{
		moveValuesFile, skipCRDsToPolicy, clampRetries, checkChartRef,
	} {
		if err := step(spec); err != nil {
			return err
		}
	}
	return nil
}

// moveValuesFile turns v2beta1's deprecated chart.spec.valuesFile into the
// first item of valuesFiles: Flux merged it before the valuesFiles items.
func moveValuesFile(spec map[string]any) error {
	chartSpec, ok, _ := unstructured.NestedMap(spec, "chart", "spec")
	if !ok {
		return nil
	}
	file, ok := chartSpec["valuesFile"].(string)
	if !ok {
		return nil
	}
	delete(chartSpec, "valuesFile")
	files, _, err := unstructured.NestedStringSlice(chartSpec, "valuesFiles")
	if err != nil {
		return fmt.Errorf("spec.chart.spec.valuesFiles: %w", err)
	}
	if file != "" && !slices.Contains(files, file) {
		files = append([]string{file}, files...)
	}
	if len(files) > 0 {
		chartSpec["valuesFiles"] = toAnySlice(files)
	}
	return unstructured.SetNestedMap(spec, chartSpec, "chart", "spec")
}

// skipCRDsToPolicy turns the deprecated install.skipCRDs into install.crds:
// Skip, unless a crds policy is set, which Flux gave precedence.
func skipCRDsToPolicy(spec map[string]any) error {
	install, ok := spec["install"].(map[string]any)
	if !ok {
		return nil
	}
	skip, ok := install["skipCRDs"].(bool)
	if !ok {
		return nil
	}
	delete(install, "skipCRDs")
	if _, set := install["crds"]; skip && !set {
		install["crds"] = kraanv1.CRDsSkip
	}
	return nil
}

// clampRetries maps Flux's "any negative number retries forever" to our -1.
func clampRetries(spec map[string]any) error {
	for _, action := range []string{"install", "upgrade"} {
		retries, ok, _ := unstructured.NestedInt64(spec, action, "remediation", "retries")
		if ok && retries < -1 {
			if err := unstructured.SetNestedField(spec, int64(-1), action, "remediation", "retries"); err != nil {
				return fmt.Errorf("spec.%s.remediation.retries: %w", action, err)
			}
		}
	}
	return nil
}

// checkChartRef refuses a chartRef our HelmRelease cannot follow (Flux v2 also
// allows HelmChart and ExternalArtifact). Dropping it would leave neither chart
// nor chartRef.
func checkChartRef(spec map[string]any) error {
	kind, ok, _ := unstructured.NestedString(spec, "chartRef", "kind")
	if ok && kind != kraanv1.OCIRepositoryKind {
		return fmt.Errorf("spec.chartRef.kind %s is not supported: only %s; "+
			"use spec.chart with a sourceRef instead", kind, kraanv1.OCIRepositoryKind)
	}
	return nil
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
