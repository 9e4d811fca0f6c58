package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/test/bench/report"
)

func results() report.Results {
	handOff := 0.4
	size := func(n int, extrapolated bool) report.Size {
		f := float64(n)
		return report.Size{
			Releases: n,
			Raw:      report.Raw{Seconds: 0.3 * f, Objects: 3 * n, Appliers: 4},
			SDK:      report.SDK{Seconds: 2 * f, Measured: min(n, 100), Extrapolated: extrapolated},
			Operator: report.Operator{
				Seconds: 0.5 * f, PeakRSSMiB: 100 + f/10, ReadyRSSMiB: 90 + f/10, IdleCPUPercent: 0.2, IdleWindowSeconds: 30,
				Install: report.Requests{Total: 28 * int64(n), ByKind: map[string]int64{"LIST secrets": 3 * int64(n)}},
				Resync:  report.Resync{SecretLists: int64(n), Requests: report.Requests{Total: 2 * int64(n), ByKind: map[string]int64{"LIST secrets": int64(n)}}},
			},
		}
	}
	return report.Results{
		Machine: report.Machine{CPUs: 2, MemoryMiB: 1024, GoVersion: "go1.26.8", Commit: "0123456789abcdef", Date: "2026-12-02T00:00:00Z"},
		Sizes:   []report.Size{size(100, false), size(1000, true)},
		Layers: &report.Layers{Layers: 2, ReleasesPerLayer: 10, Seconds: 12, RawSumSeconds: 8, Each: []report.Layer{
			{Name: "l1", Seconds: 6, RawSeconds: 4}, {Name: "l2", Seconds: 5.5, RawSeconds: 4, HandOffSeconds: &handOff},
		}},
	}
}

func TestMarkdown_labelsExtrapolatedFloorAndPerReleaseCounts(t *testing.T) {
	g := NewWithT(t)
	var b strings.Builder

	report.Markdown(&b, results())

	out := b.String()
	g.Expect(out).To(ContainSubstring("### 100 releases"))
	g.Expect(out).To(ContainSubstring("| kraan-operator | 50.0 s | 1.67 |"))
	g.Expect(out).To(ContainSubstring("floor; extrapolated from 100"))
	g.Expect(out).To(ContainSubstring("| LIST secrets | 3.00 | 1.00 |"))
	g.Expect(out).To(ContainSubstring("| of which each release's | 25.00 | 1.00 |"))
	g.Expect(out).To(ContainSubstring("| of which the wave's (LIST, WATCH, discovery) | 3.00 | 1.00 |"))
	g.Expect(out).To(ContainSubstring("| l2 | 5.5 s | 4.0 s | 1.38 | 0.4 s |"))
}

// TestMarkdown_SplitsTheWavesRequestsFromEachReleases: informers' LISTs
// and WATCHes and discovery (a GET of a path) are the wave's; a GET of an
// object is the release's.
func TestMarkdown_SplitsTheWavesRequestsFromEachReleases(t *testing.T) {
	g := NewWithT(t)
	r := results()
	r.Sizes = r.Sizes[:1] // 100 releases
	r.Sizes[0].Operator.Install = report.Requests{Total: 1000, ByKind: map[string]int64{
		"PATCH kraan.io/helmreleases/status": 200, "GET secrets": 100, "GET apps/deployments": 100,
		"LIST apps/deployments": 10, "WATCH apps/deployments": 20, "GET /version": 10, "GET /openapi/v3": 10,
	}}
	var b strings.Builder

	report.Markdown(&b, r)

	out := b.String()
	g.Expect(out).To(ContainSubstring("| of which each release's | 9.50 | 1.00 |"))
	g.Expect(out).To(ContainSubstring("| of which the wave's (LIST, WATCH, discovery) | 0.50 | 1.00 |"))
}

func TestPlot_rendersSVGFromWrittenResults(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	g.Expect(report.Write(path, results())).To(Succeed())
	r, err := report.Read(path)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(report.Plot(r, filepath.Join(dir, "bench.svg"))).To(Succeed())

	svg, err := os.ReadFile(filepath.Join(dir, "bench.svg"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(svg)).To(ContainSubstring("<svg"))
	g.Expect(string(svg)).To(ContainSubstring("extrapolated"))
}

// TestPlot_noReleaseCounts: a run of the layers alone has no release counts
// to plot; Plot says so instead of panicking in the plotting library.
func TestPlot_noReleaseCounts(t *testing.T) {
	err := report.Plot(report.Results{}, filepath.Join(t.TempDir(), "bench.svg"))
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("nothing to plot")))
}

func TestMerge_SizesOfSeveralRunsInOrder_TheLaterRunWins(t *testing.T) {
	g := NewWithT(t)
	small, big := results(), results()
	big.Layers = nil
	big.Machine.Commit = "fedcba9876543210"
	big.Sizes = []report.Size{{Releases: 10000}, {Releases: 1000, Raw: report.Raw{Seconds: 1}}}
	m := report.Merge(small, big)
	sizes := make([]int, 0, len(m.Sizes))
	for _, s := range m.Sizes {
		sizes = append(sizes, s.Releases)
	}
	g.Expect(sizes).To(Equal([]int{100, 1000, 10000}))
	g.Expect(m.Sizes[1].Raw.Seconds).To(Equal(1.0), "the earlier run's 1000 was kept")
	g.Expect(m.Machine.Commit).To(Equal("fedcba9876543210"))
	g.Expect(m.Layers).To(Equal(small.Layers), "a run without layers dropped the earlier run's")
}

// TestPlotCurves_OnlyTheSizesThatCarryCurves: a size measured before the
// bench kept curves has none and is left out; with no size left there is
// nothing to plot, which PlotCurves says.
func TestPlotCurves_OnlyTheSizesThatCarryCurves(t *testing.T) {
	g := NewWithT(t)
	r := results()
	twentieths := func(total float64) []float64 {
		out := make([]float64, report.CurveSteps)
		for i := range out {
			out[i] = total * float64(i+1) / report.CurveSteps
		}
		return out
	}
	path := filepath.Join(t.TempDir(), "curves.svg")
	g.Expect(report.PlotCurves(r, path)).To(MatchError(ContainSubstring("nothing to plot")))

	r.Sizes[1].Raw.Curve = twentieths(r.Sizes[1].Raw.Seconds)
	r.Sizes[1].Operator.Curve = twentieths(r.Sizes[1].Operator.Seconds)
	g.Expect(report.PlotCurves(r, path)).To(Succeed())

	svg, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(svg)).To(ContainSubstring("kraan-operator, 1000"))
	g.Expect(string(svg)).To(ContainSubstring("raw, 1000"))
	g.Expect(string(svg)).NotTo(ContainSubstring("raw, 100<"))
}
