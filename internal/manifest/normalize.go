package manifest

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// normalizeSpec rewrites, in place, Flux fields that have a supported
// equivalent in our HelmRelease, so that they are carried rather than dropped.
func normalizeSpec(spec map[string]any) error {
	for _, step := range []func(map[string]any) error{
		moveValuesFile, clampRetries, checkChartRef, movePatches,
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

// checkChartRef refuses a chartRef our HelmRelease cannot follow. Dropping
// it would leave neither chart nor chartRef.
func checkChartRef(spec map[string]any) error {
	kind, ok, _ := unstructured.NestedString(spec, "chartRef", "kind")
	if ok && kind != kraanv1.OCIRepositoryKind && kind != kraanv1.HelmChartKind && kind != kraanv1.ExternalArtifactKind {
		return fmt.Errorf("spec.chartRef.kind %s is not supported (%s): only %s, %s and %s; "+
			"use spec.chart with a sourceRef instead", kind, UnsupportedField, kraanv1.OCIRepositoryKind, kraanv1.HelmChartKind,
			kraanv1.ExternalArtifactKind)
	}
	return nil
}

// movePatches turns v2beta1's kustomize patchesStrategicMerge (objects) and
// patchesJson6902 (target and operations) into patches, which Flux v2 reads
// the same way: each becomes one inline patch document.
func movePatches(spec map[string]any) error {
	renderers, _ := spec["postRenderers"].([]any)
	for i, r := range renderers {
		k, ok, _ := unstructured.NestedMap(asMap(r), "kustomize")
		if !ok {
			continue
		}
		patches, _ := k["patches"].([]any)
		for _, smp := range asSlice(k["patchesStrategicMerge"]) {
			doc, err := yaml.Marshal(smp)
			if err != nil {
				return fmt.Errorf("spec.postRenderers[%d].kustomize.patchesStrategicMerge: %w", i, err)
			}
			patches = append(patches, map[string]any{"patch": string(doc)})
		}
		for _, j := range asSlice(k["patchesJson6902"]) {
			p := asMap(j)
			doc, err := yaml.Marshal(p["patch"])
			if err != nil {
				return fmt.Errorf("spec.postRenderers[%d].kustomize.patchesJson6902: %w", i, err)
			}
			patch := map[string]any{"patch": string(doc)}
			if target, ok := p["target"]; ok {
				patch["target"] = target
			}
			patches = append(patches, patch)
		}
		delete(k, "patchesStrategicMerge")
		delete(k, "patchesJson6902")
		if len(patches) > 0 {
			k["patches"] = patches
		}
		asMap(r)["kustomize"] = k
	}
	return nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
