package manifest

import (
	"fmt"
	"reflect"
	"strings"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// UnsupportedField is the word every refusal of a Flux field carries, so that
// a user can search for it (it is also the CRD's admission message prefix).
const UnsupportedField = "UnsupportedField"

// FieldRule says what happens to one Flux HelmRelease field path that our
// HelmRelease does not implement with Flux's meaning.
type FieldRule struct {
	// Path is the field's JSON path below spec, list items written as [],
	// e.g. "dependsOn[].readyExpr".
	Path string
	// Reason says why, for the refusal message and docs/helmreleases.md.
	Reason string
}

// RefusedFields are the Flux fields a HelmRelease may not set: honouring them
// is not implemented, and ignoring them would deploy something other than what
// Flux deploys. A Flux HelmRelease in a layer that sets one is not converted;
// a kraan.io HelmRelease that sets one is rejected by the API server (the
// CRD's CEL rules, whose messages say the same).
var RefusedFields = []FieldRule{
	{"kubeConfig.configMapRef", "a cloud provider's workload identity is not implemented; use kubeConfig.secretRef"},
	{"chart.spec.verify", "the chart would be installed without verifying its signature"},
	{"chart.spec.serviceAccountName", "registry credentials come from chart.spec.secretRef, not from a ServiceAccount's image pull secrets"},
	{"chart.spec.proxySecretRef", "registries are reached through the operator's own proxy settings (HTTPS_PROXY), not per release"},
	{"chart.spec.ref.semverFilter", "a regular expression over tags is not implemented; name the versions with chart.spec.ref.semver"},
}

// NoEffectFields are Flux fields that are accepted and carried but change
// nothing, because what they configure does not exist here. Each reason says
// why the deployed result is still the one Flux would give.
var NoEffectFields = []FieldRule{
	{"chart.metadata", "labels and annotations of the HelmChart (or OCIRepository) object helm-controller creates; kraan-operator reads the chart from the source directly and creates none"},
	{"chart.spec.ignore", "filters the files of an OCI artifact; a chart is read whole from its Helm chart layer, as helm-controller's OCIRepository selects it"},
}

// UnwrittenStatusFields are the fields of Flux's HelmReleaseStatus our
// status does not have, with why; every other Flux status field is written
// with Flux's meaning.
var UnwrittenStatusFields = []FieldRule{
	{"helmChart", "the HelmChart object helm-controller creates; kraan-operator creates none"},
	{"observedCommonMetadataDigest", "observedPostRenderersDigest covers spec.commonMetadata as well as spec.postRenderers"},
	{"lastReleaseRevision", "deprecated by Flux in favour of history[].version"},
	{"history[].apiVersion", "the version of Flux's digest method; history[].digest here is the chart's digest"},
	{"history[].deleted", "an uninstalled revision is reported by history[].status"},
	{"history[].ociDigest", "lastAttemptedRevisionDigest holds the chart's digest, wherever it came from"},
}

// helmReleaseSpecFields are the spec fields our HelmRelease has.
var helmReleaseSpecFields = newFieldTree(reflect.TypeFor[kraanv1.HelmReleaseSpec]())

// refusedIn returns the refused fields spec sets, as "spec.<path>" with list
// indexes, with their reasons.
func refusedIn(spec map[string]any) []string {
	var found []string
	for _, rule := range RefusedFields {
		for _, at := range setPaths(spec, strings.Split(rule.Path, "."), specField) {
			found = append(found, fmt.Sprintf("field %s is not supported (%s): %s", at, UnsupportedField, rule.Reason))
		}
	}
	return found
}

// setPaths returns where v sets the field path steps (a step ending in []
// descends into every item of a list), written out from prefix.
func setPaths(v any, steps []string, prefix string) []string {
	if len(steps) == 0 {
		return []string{prefix}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	name, list := strings.CutSuffix(steps[0], "[]")
	child, ok := m[name]
	if !ok {
		return nil
	}
	if !list {
		return setPaths(child, steps[1:], prefix+"."+name)
	}
	items, _ := child.([]any)
	var out []string
	for i, item := range items {
		out = append(out, setPaths(item, steps[1:], fmt.Sprintf("%s.%s[%d]", prefix, name, i))...)
	}
	return out
}
