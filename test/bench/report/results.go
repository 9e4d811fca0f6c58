package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Results are everything one `make bench` run measured.
type Results struct {
	// Machine is where it ran.
	Machine Machine `json:"machine"`
	// Sizes holds one entry per KRAAN_BENCH_RELEASES value, in run order.
	Sizes []Size `json:"sizes"`
	// Layers is the chained-layers run, measured once per `make bench`.
	Layers *Layers `json:"layers,omitempty"`
}

// Machine describes the host of a run.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemoryMiB int    `json:"memoryMiB"`
	GoVersion string `json:"goVersion"`
	Kernel    string `json:"kernel,omitempty"`
	// Commit is the operator's git commit (HEAD of the working tree built).
	Commit string `json:"commit,omitempty"`
	// Date is when the run started (RFC 3339).
	Date string `json:"date"`
}

// Size is what was measured for one number of releases, each system on the
// same fresh local plane.
type Size struct {
	Releases int      `json:"releases"`
	Raw      Raw      `json:"raw"`
	SDK      SDK      `json:"sequentialSDK"`
	Operator Operator `json:"operator"`
}

// Raw is the limit of the cluster: the chart's rendered objects
// server-side-applied directly by parallel appliers, waited until every
// Deployment is Available (kstatus Current).
type Raw struct {
	// Seconds from the first apply to the last Deployment Available.
	Seconds float64 `json:"seconds"`
	// Objects applied in all, and by how many appliers in parallel.
	Objects  int `json:"objects"`
	Appliers int `json:"appliers"`
	// Curve is the seconds from the first apply until 5 %, 10 %, … 100 %
	// of the Deployments were Available.
	Curve []float64 `json:"curve,omitempty"`
	// PlaneCPUSeconds is the CPU time the plane's processes used in those
	// Seconds: beside Operator.PlaneCPUSeconds, whether the cluster did
	// more work for the same releases in the operator's phase.
	PlaneCPUSeconds float64 `json:"planeCPUSeconds,omitempty"`
}

// SDK is sequential Helm SDK installs with wait, one release after another:
// a floor, not a competitor.
type SDK struct {
	// Seconds for all the releases; extrapolated linearly from Measured
	// installs when Extrapolated is true.
	Seconds float64 `json:"seconds"`
	// Measured is how many releases were really installed.
	Measured     int  `json:"measured"`
	Extrapolated bool `json:"extrapolated"`
}

// Operator is the operator binary, run as a separate process against a
// counting proxy of the API server.
type Operator struct {
	// Seconds from the first HelmRelease created to the last one Ready.
	Seconds float64 `json:"seconds"`
	// Curve is the seconds from the first HelmRelease created until 5 %,
	// 10 %, … 100 % of them were Ready: beside Raw.Curve, where the
	// operator falls behind the cluster (its start, its pace, its tail).
	Curve []float64 `json:"curve,omitempty"`
	// CPUSeconds is the operator's CPU time from the first HelmRelease
	// created to the last one Ready, PlaneCPUSeconds the plane's: on a
	// machine of two cores, the two share them.
	CPUSeconds      float64 `json:"cpuSeconds,omitempty"`
	PlaneCPUSeconds float64 `json:"planeCPUSeconds,omitempty"`
	// PeakRSSMiB is the process's VmHWM when all were Ready, ReadyRSSMiB its
	// VmRSS then.
	PeakRSSMiB  float64 `json:"peakRSSMiB"`
	ReadyRSSMiB float64 `json:"readyRSSMiB"`
	// IdleRSSMiB is its VmRSS at the end of the idle window: the releases
	// Deployed and in sync, the rollout's garbage returned.
	IdleRSSMiB float64 `json:"idleRSSMiB"`
	// IdleAnonMiB and IdleFileMiB split IdleRSSMiB (smaps_rollup): the
	// process's own memory (heap, stacks) and the pages of its executable
	// mapped from the page cache, which are clean, shared and reclaimable.
	IdleAnonMiB float64 `json:"idleAnonMiB,omitempty"`
	IdleFileMiB float64 `json:"idleFileMiB,omitempty"`
	// IdleHeapMiB is the Go heap in use then (runtime/metrics
	// /memory/classes/heap/objects:bytes), after a GC.
	IdleHeapMiB float64 `json:"idleHeapMiB,omitempty"`
	// IdleCPUPercent is the process's CPU time (user+system) over
	// IdleWindowSeconds right after all were Ready, in % of one core.
	IdleCPUPercent    float64 `json:"idleCPUPercent"`
	IdleWindowSeconds float64 `json:"idleWindowSeconds"`
	// IdleReconciles are the HelmRelease reconciles in that window: once
	// a wave outlasts spec.interval (10m by default), the interval's
	// reconciles (n per interval) are the steady state's work.
	IdleReconciles float64 `json:"idleReconciles,omitempty"`
	// SettledCPUPercent is the CPU time over the next IdleWindowSeconds,
	// once the wave's end is over: the steady state of n Deployed releases;
	// SettledReconciles the reconciles in it.
	SettledCPUPercent float64 `json:"settledCPUPercent,omitempty"`
	SettledReconciles float64 `json:"settledReconciles,omitempty"`
	// Install are the API requests the operator made from the first
	// HelmRelease created to the last one Ready.
	Install Requests `json:"install"`
	// HelmActionsInstall is the Helm actions the operator's metrics counted
	// over the same window.
	HelmActionsInstall float64 `json:"helmActionsInstall"`
	// StatusWritesInstall are the status writes the operator counted over
	// the same window, by cause (kraan_helmrelease_status_writes_total).
	StatusWritesInstall map[string]float64 `json:"statusWritesInstall,omitempty"`
	Resync              Resync             `json:"resync"`
	ColdStart           ColdStart          `json:"coldStart"`
	// Pacing is the most the rollout pacing showed during the install
	// (kraan_helmrelease_rollouts, sampled every 10 s).
	Pacing Pacing `json:"pacing"`
}

// Pacing are the highest values of the rollout pacing's gauges seen, and
// the gauges over time.
type Pacing struct {
	MaxLimit   float64 `json:"maxLimit"`
	MaxRolling float64 `json:"maxRolling"`
	MaxQueued  float64 `json:"maxQueued"`
	// Samples are the gauges and the operator's CPU time every 10 s of
	// the install: beside the curve, whether the pacing kept the cluster
	// busy and what the operator spent meanwhile.
	Samples []PacingSample `json:"samples,omitempty"`
}

// PacingSample is one look at the rollout pacing during an install.
type PacingSample struct {
	// Seconds since the sampling began, just before the first
	// HelmRelease was created.
	Seconds float64 `json:"seconds"`
	Limit   float64 `json:"limit"`
	Rolling float64 `json:"rolling"`
	Queued  float64 `json:"queued"`
	// CPUSeconds is the operator's CPU time (user and system) so far,
	// PlaneCPUSeconds the plane's (all its processes together).
	CPUSeconds      float64 `json:"cpuSeconds"`
	PlaneCPUSeconds float64 `json:"planeCPUSeconds,omitempty"`
}

// Requests counts API requests by kind ("LIST secrets", "PATCH
// kraan.io/helmreleases/status").
type Requests struct {
	Total  int64            `json:"total"`
	ByKind map[string]int64 `json:"byKind"`
}

// Resync is a forced reconcile of every HelmRelease in sync
// (reconcile.fluxcd.io/requestedAt), counted until every one has handled it.
type Resync struct {
	Seconds float64 `json:"seconds"`
	// HelmActions is the rise of kraan_helm_action_duration_seconds_count.
	HelmActions float64 `json:"helmActions"`
	// SecretLists is the LISTs of Secrets the proxy saw.
	SecretLists int64 `json:"secretLists"`
	// NewRevisions is how many Helm release revisions appeared.
	NewRevisions int      `json:"newRevisions"`
	Requests     Requests `json:"requests"`
}

// ColdStart is a new operator process after a SIGKILL, with every release
// deployed.
type ColdStart struct {
	// Seconds from the new process's start to every HelmRelease confirmed
	// Ready: the controller reconciled at least once per release, its
	// queue is empty and every HelmRelease is Ready.
	Seconds float64 `json:"seconds"`
	// ReadyzSeconds from start to its /readyz answering 200.
	ReadyzSeconds float64 `json:"readyzSeconds"`
	// Reconciles is controller_runtime_reconcile_total of the helmrelease
	// controller at that moment.
	Reconciles float64 `json:"reconciles"`
	// HelmActions and NewRevisions must be 0: nothing to upgrade.
	HelmActions  float64  `json:"helmActions"`
	NewRevisions int      `json:"newRevisions"`
	Requests     Requests `json:"requests"`
	// PeakRSSMiB and RSSMiB are the new process's VmHWM and VmRSS when
	// every release was confirmed Ready: the same releases Deployed as
	// Operator.IdleRSSMiB, held by a process that never installed them.
	PeakRSSMiB float64 `json:"peakRSSMiB,omitempty"`
	RSSMiB     float64 `json:"rssMiB,omitempty"`
}

// Layers is AddonsLayers chained one on another, each holding the same
// number of HelmReleases, deployed from Git.
type Layers struct {
	Layers           int `json:"layers"`
	ReleasesPerLayer int `json:"releasesPerLayer"`
	// Seconds from creating the layers to all Deployed.
	Seconds float64 `json:"seconds"`
	// RawSumSeconds is the sum of each layer's raw time.
	RawSumSeconds float64 `json:"rawSumSeconds"`
	Each          []Layer `json:"each"`
}

// Layer is one layer of Layers.
type Layer struct {
	Name string `json:"name"`
	// Seconds from its first HelmRelease created to the layer Deployed.
	Seconds float64 `json:"seconds"`
	// RawSeconds is the raw limit for its releases' objects alone.
	RawSeconds float64 `json:"rawSeconds"`
	// HandOffSeconds is from the layer before it turning Deployed to this
	// one's first HelmRelease created; absent for the first layer.
	HandOffSeconds *float64 `json:"handOffSeconds,omitempty"`
}

// Write writes v as indented JSON to path, creating its directory.
func Write(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Read reads the combined results.json Write wrote.
func Read(path string) (Results, error) {
	var r Results
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Merge combines the results of several runs of one machine into one: the
// sizes of all (a size measured twice keeps the later run's), the machine and
// layers of the last. The curve of docs/performance.md spans runs: a
// 10,000-release run takes hours, the small sizes are measured apart.
func Merge(runs ...Results) Results {
	var out Results
	bySize := map[int]int{}
	for _, r := range runs {
		out.Machine = r.Machine
		if r.Layers != nil {
			out.Layers = r.Layers
		}
		for _, s := range r.Sizes {
			if i, ok := bySize[s.Releases]; ok {
				out.Sizes[i] = s
				continue
			}
			bySize[s.Releases] = len(out.Sizes)
			out.Sizes = append(out.Sizes, s)
		}
	}
	sort.Slice(out.Sizes, func(i, j int) bool { return out.Sizes[i].Releases < out.Sizes[j].Releases })
	return out
}
