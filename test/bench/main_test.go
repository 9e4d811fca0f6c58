// Package bench is `make bench`: on a fresh local plane per size, it
// measures side by side, in one run, the raw limit of the cluster (the
// chart's rendered objects server-side-applied by parallel appliers, waited
// Available), the operator binary (install, memory, idle CPU, API requests,
// a forced resync and a cold start) and sequential Helm SDK installs as a
// floor; then chained AddonsLayers from Git once. It prints tables, writes
// JSON under bin/bench/ and renders bin/bench/bench.svg (test/bench/report).
// Results are numbers for people to judge, never assertions on time.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
	"github.com/kraan-io/kraan-operator/test/bench/report"
	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// sizes are the numbers of releases to measure: KRAAN_BENCH_RELEASES, a
// space- or comma-separated list ("100 1000"); 100 by default.
func sizes() ([]int, error) {
	v := strings.TrimSpace(os.Getenv("KRAAN_BENCH_RELEASES"))
	if v == "" {
		return []int{100}, nil
	}
	var out []int
	for f := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ' ' || r == ',' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("KRAAN_BENCH_RELEASES: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// progressf tells the person waiting what the bench is doing.
func progressf(format string, args ...any) {
	fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func BenchmarkSideBySide(b *testing.B) {
	ctrl.SetLogger(logr.Discard()) // envtest's CRD installer logs through it
	ns, err := sizes()
	if err != nil {
		b.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(root, "bin", "bench")
	if err := os.RemoveAll(filepath.Join(out, "run")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	results := report.Results{Machine: machine(ctx, root)}
	progressf("building the operator as its image does")
	// Measured as shipped: stripped and with paths trimmed, which makes
	// the executable the process maps smaller.
	bin := filepath.Join(b.TempDir(), "kraan-operator")
	platform := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	if err := imagebuild.BuildBinary(ctx, root, platform, bin); err != nil {
		b.Fatal(err)
	}
	for _, n := range ns {
		b.Run(fmt.Sprintf("releases=%d", n), func(b *testing.B) {
			s := measureSize(ctx, b, filepath.Join(out, "run", strconv.Itoa(n)), bin, n)
			results.Sizes = append(results.Sizes, s)
			reportSize(b, s)
			one := report.Results{Machine: results.Machine, Sizes: []report.Size{s}} // benchplot reads it too
			if err := report.Write(filepath.Join(out, fmt.Sprintf("results-%d.json", n)), one); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("layers", func(b *testing.B) {
		l := measureLayerSize(ctx, b, filepath.Join(out, "run", "layers"), bin)
		results.Layers = &l
		b.ReportMetric(l.Seconds, "all-deployed-s")
		b.ReportMetric(l.Seconds/l.RawSumSeconds, "x-raw")
	})
	if err := writeResults(out, results); err != nil {
		b.Fatal(err)
	}
}

// writeResults writes results.json, the tables (printed and as
// tables.md) and the plot.
func writeResults(out string, r report.Results) error {
	if err := report.Write(filepath.Join(out, "results.json"), r); err != nil {
		return err
	}
	var tables strings.Builder
	report.Markdown(&tables, r)
	fmt.Print("\n" + tables.String())
	if err := os.WriteFile(filepath.Join(out, "tables.md"), []byte(tables.String()), 0o644); err != nil {
		return err
	}
	if len(r.Sizes) == 0 {
		fmt.Println("Results in " + filepath.Join(out, "results.json") + " (no release counts measured: no plot)")
		return nil
	}
	svg, curves := filepath.Join(out, "bench.svg"), filepath.Join(out, "curves.svg")
	if err := report.Plot(r, svg); err != nil {
		return err
	}
	if err := report.PlotCurves(r, curves); err != nil {
		return err
	}
	fmt.Printf("Results in %s, plots %s and %s\n", filepath.Join(out, "results.json"), svg, curves)
	return nil
}

func reportSize(b *testing.B, s report.Size) {
	n := float64(s.Releases)
	b.ReportMetric(s.Raw.Seconds, "raw-s")
	b.ReportMetric(s.Operator.Seconds, "operator-s")
	b.ReportMetric(s.Operator.Seconds/s.Raw.Seconds, "x-raw")
	b.ReportMetric(s.SDK.Seconds, "sequential-sdk-s")
	b.ReportMetric(s.Operator.PeakRSSMiB, "peak-rss-MiB")
	b.ReportMetric(s.Operator.IdleCPUPercent, "idle-cpu-%")
	b.ReportMetric(float64(s.Operator.Install.Total)/n, "api-requests/release")
	b.ReportMetric(s.Operator.ColdStart.Seconds, "cold-start-s")
}

// planeEnv is a fresh local plane with the operator's and Flux's source
// CRDs, and an admin client without client-side rate limits.
type planeEnv struct {
	tb     testing.TB
	dir    string
	plane  *localplane.Plane
	cfg    *rest.Config
	client client.WithWatch
}

func startPlane(ctx context.Context, b *testing.B, dir string) *planeEnv {
	for _, v := range []string{"KUBEBUILDER_ASSETS", "KRAAN_SOURCE_CRDS"} {
		if os.Getenv(v) == "" {
			b.Fatalf("%s is not set: run `make bench`", v)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	progressf("starting a local plane in %s", dir)
	plane, err := localplane.Start(ctx, localplane.Options{Dir: filepath.Join(dir, "plane")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = plane.Stop() })
	cfg := plane.RESTConfig()
	cfg.QPS = -1 // no client-side limit: the raw limit is the cluster's, and the operator has none either
	if err := testenv.InstallCRDs(cfg); err != nil {
		b.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	return &planeEnv{tb: b, dir: dir, plane: plane, cfg: cfg, client: c}
}

// measureSize measures the three systems for n releases on one fresh plane:
// raw first, then the operator, then the sequential floor, each in its own
// namespace.
func measureSize(ctx context.Context, b *testing.B, dir, bin string, n int) report.Size {
	p := startPlane(ctx, b, dir)
	s := report.Size{Releases: n}
	names := make([]string, n)
	for i := range names {
		names[i] = releaseName(i)
	}
	progressf("raw limit, %d releases", n)
	objs, err := renderReleases("raw", names)
	if err != nil {
		b.Fatal(err)
	}
	planeBefore, err := planeCPUTime(p.plane.PIDs())
	if err != nil {
		b.Fatal(err)
	}
	if s.Raw, err = applyRaw(ctx, p.client, "raw", objs); err != nil {
		b.Fatal(err)
	}
	planeAfter, err := planeCPUTime(p.plane.PIDs())
	if err != nil {
		b.Fatal(err)
	}
	s.Raw.PlaneCPUSeconds = (planeAfter - planeBefore).Seconds()
	progressf("  raw: %.1f s (the plane used %.0f s of CPU)", s.Raw.Seconds, s.Raw.PlaneCPUSeconds)
	progressf("operator, %d releases", n)
	if s.Operator, err = measureOperator(ctx, p, bin, n); err != nil {
		b.Fatal(err)
	}
	progressf("  operator: %.1f s (× %.2f raw; the plane used %.0f s of CPU, the operator %.0f s)",
		s.Operator.Seconds, s.Operator.Seconds/s.Raw.Seconds, s.Operator.PlaneCPUSeconds, s.Operator.CPUSeconds)
	progressf("sequential Helm SDK, %d releases", min(n, sdkMeasured))
	if s.SDK, err = installSequentially(ctx, p.client, p.plane.Kubeconfig(), n); err != nil {
		b.Fatal(err)
	}
	progressf("  sequential Helm SDK: %.1f s", s.SDK.Seconds)
	return s
}

func measureLayerSize(ctx context.Context, b *testing.B, dir, bin string) report.Layers {
	p := startPlane(ctx, b, dir)
	l, err := measureLayers(ctx, p, bin)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// machine describes this host for the results.
func machine(ctx context.Context, root string) report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().Format(time.RFC3339)}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.Atoi(f[1])
				m.MemoryMiB = kb / 1024
			}
		}
	}
	if out, err := exec.CommandContext(ctx, "uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	git := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
	git.Dir = root
	if out, err := git.Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}
