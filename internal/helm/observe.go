package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// Release labels the engine writes into Helm storage, so that whether a
// revision matches the desired state is read from storage itself.
const (
	// ChartDigestLabel holds a prefix of the chart archive's digest: two
	// charts with the same version (a chart in a Git path) still differ.
	ChartDigestLabel = "kraan.io/chart-digest"
	// ValuesDigestLabel holds a prefix of the values' digest.
	ValuesDigestLabel = "kraan.io/values-digest"
	// PostRenderersDigestLabel holds a prefix of PostRenderersDigest, when
	// the release has post-renderers or common metadata.
	PostRenderersDigestLabel = "kraan.io/post-renderers-digest"
	// InterruptedLabel marks a revision the engine unlocked: an operation
	// (install, upgrade, rollback) left it pending when it was interrupted,
	// e.g. the operator was killed. Its value is the status it was left in.
	InterruptedLabel = "kraan.io/interrupted"
)

// labelDigestLength keeps digests within the 63 characters of a label value.
const labelDigestLength = 32

// Desired is the state a release should be in.
type Desired struct {
	Chart *chart.Chart
	// ChartDigest identifies the chart's content, e.g. "sha256:…".
	ChartDigest string
	Values      map[string]any
	// PostRenderersDigest is PostRenderersDigest of the spec ("" for none).
	PostRenderersDigest string
}

// ValuesDigest is the digest of values, stable across map orderings.
func ValuesDigest(values map[string]any) string {
	if values == nil {
		values = map[string]any{}
	}
	data, _ := json.Marshal(values) // maps marshal with sorted keys
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// labels are the storage labels recording d.
func (d Desired) labels() map[string]string {
	labels := map[string]string{
		ChartDigestLabel:  labelDigest(d.ChartDigest),
		ValuesDigestLabel: labelDigest(ValuesDigest(d.Values)),
	}
	if d.PostRenderersDigest != "" {
		labels[PostRenderersDigestLabel] = labelDigest(d.PostRenderersDigest)
	}
	return labels
}

// Matches says whether rel was made from d's chart and values.
func (d Desired) Matches(rel *release.Release) bool {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return false
	}
	if recordTrust(rel) == RecordTampered {
		// Another Helm client wrote it with the labels of the operator's
		// revision before (Helm copies them): they say nothing of what it
		// deploys. Only adopt, which renders and compares, vouches for it.
		return false
	}
	meta := d.Chart.Metadata
	if rel.Chart.Metadata.Name != meta.Name || rel.Chart.Metadata.Version != meta.Version {
		return false
	}
	if rel.Labels[ChartDigestLabel] != labelDigest(d.ChartDigest) ||
		rel.Labels[PostRenderersDigestLabel] != labelDigest(d.PostRenderersDigest) {
		return false
	}
	// Config is what was passed at install or upgrade; compare its digest rather
	// than the label so that a release made by the helm CLI is judged too.
	return ValuesDigest(rel.Config) == ValuesDigest(d.Values)
}

// MatchesLabels says whether a record carrying labels (Helm storage keeps a
// release's labels on its Secret) was made by the engine from d.
func (d Desired) MatchesLabels(labels map[string]string) bool {
	for k, v := range d.labels() {
		if labels[k] != v {
			return false
		}
	}
	return d.PostRenderersDigest != "" || labels[PostRenderersDigestLabel] == ""
}

func labelDigest(digest string) string {
	for i := 0; i < len(digest); i++ {
		if digest[i] == ':' {
			digest = digest[i+1:]
			break
		}
	}
	if len(digest) > labelDigestLength {
		digest = digest[:labelDigestLength]
	}
	return digest
}

// observe reads the release's history from storage. Helm's secrets driver
// queries by the labels name=<release>,owner=helm, so this reads only this
// release's records, not every release Secret of the namespace.
func observe(cfg *action.Configuration, name string) (Observation, error) {
	stored, err := cfg.Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return Observation{}, nil
	}
	if err != nil {
		return Observation{}, fmt.Errorf("reading the history of release %s: %w", name, err)
	}
	history, err := v1Releases(stored)
	if err != nil {
		return Observation{}, fmt.Errorf("reading the history of release %s: %w", name, err)
	}
	var obs Observation
	for _, rel := range history {
		if obs.Latest == nil || rel.Version > obs.Latest.Version {
			obs.Latest = rel
		}
	}
	for _, rel := range history {
		if rel.Version >= obs.Latest.Version || rel.Info == nil {
			continue
		}
		deployed := rel.Info.Status == rcommon.StatusDeployed || rel.Info.Status == rcommon.StatusSuperseded
		if deployed && (obs.PreviousDeployed == nil || rel.Version > obs.PreviousDeployed.Version) {
			obs.PreviousDeployed = rel
		}
	}
	return obs, nil
}
