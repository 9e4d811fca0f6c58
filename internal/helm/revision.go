package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/strvals"
)

// Chart is a loaded Helm chart. Outside this package it is only passed
// around: the controllers never look inside, so a move to another Helm major
// version changes this package alone.
type Chart = chart.Chart

// LoadChart loads the chart in a directory or archive at path.
func LoadChart(path string) (*Chart, error) {
	return loader.Load(path)
}

// ChartDigest identifies a loaded chart's content: two charts of one version
// that differ in a file have different digests.
func ChartDigest(c *Chart) string {
	h := sha256.New()
	files := make([]string, 0, len(c.Raw))
	data := map[string][]byte{}
	for _, f := range c.Raw {
		files = append(files, f.Name)
		data[f.Name] = f.Data
	}
	sort.Strings(files)
	for _, name := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data[name]))
		h.Write(data[name])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ChartVersion is the version of the desired chart.
func (d Desired) ChartVersion() string {
	if d.Chart == nil || d.Chart.Metadata == nil {
		return ""
	}
	return d.Chart.Metadata.Version
}

// ChartName is the name of the desired chart.
func (d Desired) ChartName() string {
	if d.Chart == nil || d.Chart.Metadata == nil {
		return ""
	}
	return d.Chart.Metadata.Name
}

// ParseSetValue sets a `--set` style key=value into values, as Helm's CLI
// and Operator SDK's watches.yaml overrides do. A key that names nothing
// ("a[") is an error: Helm 4's parser takes it and sets nothing.
func ParseSetValue(keyValue string, values map[string]any) error {
	alone := map[string]any{}
	if err := strvals.ParseInto(keyValue, alone); err != nil {
		return err
	}
	if len(alone) == 0 {
		key, _, _ := strings.Cut(keyValue, "=")
		return fmt.Errorf("key %q names no value", key)
	}
	return strvals.ParseInto(keyValue, values)
}

// Revision is what the controllers report of one revision of a release.
type Revision struct {
	Name      string
	Namespace string
	Version   int
	// Status is Helm's: deployed, failed, pending-install…
	Status       string
	Description  string
	ChartName    string
	ChartVersion string
	AppVersion   string
	// ChartDigest is the prefix of the chart digest the engine labelled the
	// revision with; ConfigDigest the digest of the values it was made with.
	ChartDigest   string
	ConfigDigest  string
	FirstDeployed time.Time
	LastDeployed  time.Time
	// Manifest is the rendered manifest.
	Manifest string
	// TestsRan and TestsFailed report the test hooks of the revision.
	TestsRan    bool
	TestsFailed bool
	// TestHooks are the test hooks that ran, by name.
	TestHooks map[string]TestHookRun
	// Matches says whether the revision was made from the desired chart and values.
	Matches bool
	// Trust says whether the operator's key verified the record (RecordTrust).
	Trust RecordTrust
	// WrittenBy and WrittenAt say who last wrote the record's Secret and
	// when (RFC 3339), as its managed fields say; empty when unknown.
	WrittenBy, WrittenAt string
}

// OutsideReport says, for a user, that the revision was written outside the
// operator and what the operator does about it. It names the writer, the
// time and Helm's description, never the record's content. A failed
// revision's description quotes what the API server refused — rendered
// objects, Secret data among them, which no redactor of the operator knows
// (another client rendered them) — so it is left out.
func (r *Revision) OutsideReport() string {
	var by []string
	if r.WrittenBy != "" {
		by = append(by, "by "+r.WrittenBy)
	}
	if r.WrittenAt != "" {
		by = append(by, "at "+r.WrittenAt)
	}
	if r.Description != "" && !r.Failed() {
		by = append(by, fmt.Sprintf("Helm says %q", r.Description))
	}
	who := ""
	if len(by) > 0 {
		who = " (" + strings.Join(by, ", ") + ")"
	}
	return fmt.Sprintf("revision %d (%s) of release %s/%s was written outside the operator%s: nothing is replayed from it "+
		"(hooks, rollback, drift correction); the operator brings the release back to its spec with a revision of its own, "+
		"unless the revision deploys exactly that; suspend the object to keep a manual fix", r.Version, r.Status, r.Namespace, r.Name, who)
}

// TestHookRun is the last run of one test hook.
type TestHookRun struct {
	Started, Completed time.Time
	// Phase is Helm's: Succeeded, Failed, Running.
	Phase string
}

func testHookRuns(rel *release.Release) map[string]TestHookRun {
	var runs map[string]TestHookRun
	for _, h := range rel.Hooks {
		if !isTestHook(h) || h.LastRun.StartedAt.IsZero() {
			continue
		}
		if runs == nil {
			runs = map[string]TestHookRun{}
		}
		runs[h.Name] = TestHookRun{Started: h.LastRun.StartedAt, Completed: h.LastRun.CompletedAt, Phase: h.LastRun.Phase.String()}
	}
	return runs
}

// Deployed reports whether the revision is deployed.
func (r *Revision) Deployed() bool { return r != nil && r.Status == rcommon.StatusDeployed.String() }

// Failed reports whether the revision failed.
func (r *Revision) Failed() bool { return r != nil && r.Status == rcommon.StatusFailed.String() }

// LatestRevision is the newest revision in storage after the run, or nil.
func (r Result) LatestRevision(desired Desired) *Revision {
	return revisionOf(r.Latest, desired)
}

func revisionOf(rel *release.Release, desired Desired) *Revision {
	if rel == nil || rel.Info == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return nil
	}
	return &Revision{
		Name: rel.Name, Namespace: rel.Namespace, Version: rel.Version,
		Status: rel.Info.Status.String(), Description: rel.Info.Description,
		ChartName: rel.Chart.Metadata.Name, ChartVersion: rel.Chart.Metadata.Version, AppVersion: rel.Chart.Metadata.AppVersion,
		ChartDigest: rel.Labels[ChartDigestLabel], ConfigDigest: ValuesDigest(rel.Config),
		FirstDeployed: rel.Info.FirstDeployed, LastDeployed: rel.Info.LastDeployed,
		Manifest: rel.Manifest,
		TestsRan: TestsRan(rel), TestsFailed: TestsFailed(rel), TestHooks: testHookRuns(rel),
		Matches:   desired.Chart != nil && desired.Matches(rel),
		Trust:     recordTrust(rel),
		WrittenBy: rel.Labels[recordWriterLabel], WrittenAt: rel.Labels[recordWrittenAtLabel],
	}
}
