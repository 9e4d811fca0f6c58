package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

const (
	// LayerLabel names the AddonsLayer that owns an object. It is the label the
	// operator selects on.
	LayerLabel = "kraan.io/layer"
	// KraanLayerLabel is the label Kraan put on the HelmReleases of a layer. It is
	// set too, with the same value, so that Kraan-era selectors, dashboards and
	// scripts (`kubectl get hr -l kraan/layer=apps`) keep working after a
	// migration, and so that objects Kraan created are recognised as the layer's.
	KraanLayerLabel = "kraan/layer"
	// UpdateVersionAnnotation on a HelmRelease in a layer's source asks for the
	// layer's version to be put in its values (Kraan's annotation, kept verbatim):
	// bumping the layer's version then upgrades the release, e.g. to re-run a
	// test-only chart.
	UpdateVersionAnnotation = "kraan.updateVersion"
	// VersionValue is the values key InjectVersion sets.
	VersionValue = "kraanVersion"
	// ShardLabel is Flux's sharding label: an operator process started with
	// --watch-label-selector=sharding.fluxcd.io/key=<shard> reconciles only
	// the objects carrying it with that value.
	ShardLabel = "sharding.fluxcd.io/key"
)

// SetShard gives a HelmRelease of a layer the layer's shard: the label
// ShardLabel set to shard, or removed when shard is "", so that a layer and
// its releases are always reconciled by the same operator process. Other
// objects are left alone.
func SetShard(obj *unstructured.Unstructured, shard string) {
	if obj.GroupVersionKind().GroupKind() != kraanv1.GroupVersion.WithKind(helmReleaseKind).GroupKind() {
		return
	}
	labels := obj.GetLabels()
	if shard == "" {
		if _, ok := labels[ShardLabel]; ok {
			delete(labels, ShardLabel)
			obj.SetLabels(labels)
		}
		return
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ShardLabel] = shard
	obj.SetLabels(labels)
}

// LabelOwner labels obj as owned by the layer, with both LayerLabel and
// KraanLayerLabel. It fails when the layer's name is not a valid label value
// (AddonsLayer names may be up to 253 characters, label values only 63).
func LabelOwner(obj *unstructured.Unstructured, layer string) error {
	if errs := validation.IsValidLabelValue(layer); len(errs) > 0 {
		return fmt.Errorf("layer name %q cannot be used as the value of label %s: %s",
			layer, LayerLabel, strings.Join(errs, "; "))
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = make(map[string]string, 2)
	}
	labels[LayerLabel] = layer
	labels[KraanLayerLabel] = layer
	obj.SetLabels(labels)
	return nil
}

// InjectVersion sets spec.values.kraanVersion to version on a HelmRelease
// annotated `kraan.updateVersion: "true"`, as Kraan did, and leaves every other
// object alone. It fails when spec.values exists but is not a mapping.
func InjectVersion(obj *unstructured.Unstructured, version string) error {
	if obj.GetKind() != helmReleaseKind || obj.GetAnnotations()[UpdateVersionAnnotation] != "true" {
		return nil
	}
	if err := unstructured.SetNestedField(obj.Object, version, "spec", "values", VersionValue); err != nil {
		return fmt.Errorf("%s: setting spec.values.%s for annotation %s: %w",
			describe(obj), VersionValue, UpdateVersionAnnotation, err)
	}
	return nil
}
