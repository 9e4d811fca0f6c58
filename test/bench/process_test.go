package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kraan-io/kraan-operator/test/bench/report"
	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// operatorProcess is the operator binary running beside the plane, as
// suite.StartOperator runs it, but with its metrics served over plain HTTP
// on loopback: the bench reads Helm action and reconcile counts from them.
type operatorProcess struct {
	proc    *localplane.Process
	metrics string // URL of /metrics
	probe   string // URL of /readyz
	pprof   string // URL of /debug/pprof
	started time.Time
	readyz  time.Time
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// startOperator starts the binary with the default flags of the image
// (--concurrent 4, no leader election) and waits until /readyz answers.
func startOperator(ctx context.Context, bin, kubeconfig, dir, name string, args ...string) (*operatorProcess, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	dir = filepath.Join(dir, name)
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	ports := [3]int{}
	for i := range ports {
		if ports[i], err = localplane.FreePort(); err != nil {
			return nil, err
		}
	}
	o := &operatorProcess{
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]),
		probe:   fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]),
		pprof:   fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", ports[2]),
	}
	args = append(args,
		"--kubeconfig="+kubeconfig,
		"--watches-file="+filepath.Join(root, "watches.yaml"),
		"--data-path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		"--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", ports[2]),
		"--log-format=console",
		// The benchmarks' releases stand for the platform's.
		"--multi-tenancy-lockdown=false")
	o.started = time.Now()
	o.proc, err = localplane.StartProcess(localplane.ProcessOptions{
		Name: name, Dir: dir, Binary: bin, Args: args, Env: []string{"TMPDIR=" + tmp},
	})
	if err != nil {
		return nil, err
	}
	if err := o.waitReady(ctx); err != nil {
		return nil, errors.Join(err, o.proc.Stop(10*time.Second), errors.New(o.proc.LogTail(40)))
	}
	return o, nil
}

// waitReady polls /readyz every 50 ms (a short poll bounded by a deadline:
// the cold start is timed from it) until it answers 200.
func (o *operatorProcess) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if _, err := o.get(ctx, o.probe); err == nil {
			o.readyz = time.Now()
			return nil
		}
		select {
		case <-o.proc.Exited():
			return fmt.Errorf("the operator exited before it was ready: %s", o.proc.State())
		case <-ctx.Done():
			return fmt.Errorf("the operator was not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// get reads url, one of the process's endpoints.
func (o *operatorProcess) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// scrape reads the operator's metrics.
func (o *operatorProcess) scrape(ctx context.Context) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metrics, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// metrics are the metric families of one scrape, by name.
type metrics map[string]*dto.MetricFamily

// sum adds up the samples of family whose labels include every one of
// labels: counter and gauge values, histogram sample counts.
func (m metrics) sum(family string, labels map[string]string) float64 {
	total := 0.0
	for _, s := range m[family].GetMetric() {
		if !hasLabels(s, labels) {
			continue
		}
		switch {
		case s.Counter != nil:
			total += s.GetCounter().GetValue()
		case s.Gauge != nil:
			total += s.GetGauge().GetValue()
		case s.Histogram != nil:
			total += float64(s.GetHistogram().GetSampleCount())
		}
	}
	return total
}

func hasLabels(s *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range s.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// helmActions is every Helm action the operator timed, whatever its outcome.
func (m metrics) helmActions() float64 { return m.sum("kraan_helm_action_duration_seconds", nil) }

// statusWrites is the HelmRelease status writes of cause the operator sent.
func (m metrics) statusWrites(cause string) float64 {
	return m.sum("kraan_helmrelease_status_writes_total", map[string]string{"cause": cause})
}

// Process statistics from /proc. Clock ticks are USER_HZ, which Linux
// fixes at 100 for user space.
const userHZ = 100

// memoryMiB returns VmHWM (peak resident set) and VmRSS of the process.
func (o *operatorProcess) memoryMiB() (hwm, rss float64, err error) {
	m, err := o.procMiB("status")
	return m["VmHWM:"], m["VmRSS:"], err
}

// residentSplitMiB splits the process's resident set (smaps_rollup) into
// anonymous memory and pages mapped from files (its executable).
func (o *operatorProcess) residentSplitMiB() (anon, file float64, err error) {
	m, err := o.procMiB("smaps_rollup")
	return m["Anonymous:"], m["Rss:"] - m["Anonymous:"], err
}

// procMiB reads the "Name: <n> kB" lines of /proc/<pid>/<file>, in MiB.
func (o *operatorProcess) procMiB(file string) (map[string]float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", o.proc.PID(), file))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		if kb, err := strconv.ParseFloat(fields[1], 64); err == nil {
			out[fields[0]] = kb / 1024
		}
	}
	return out, nil
}

// saveHeapProfile writes the process's heap profile, taken after a GC, to
// path (with its text form and the goroutines beside it), and returns the heap in use then (MemStats.HeapAlloc).
func (o *operatorProcess) saveHeapProfile(ctx context.Context, path string) (heapMiB float64, err error) {
	data, err := o.get(ctx, o.pprof+"/heap?gc=1")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return 0, err
	}
	text, err := o.get(ctx, o.pprof+"/heap?debug=1")
	if err != nil {
		return 0, err
	}
	// The runtime's own accounting (stacks, spans, idle and released
	// heap) and the goroutines alive: what the resident set holds beyond
	// the live heap.
	if err := os.WriteFile(strings.TrimSuffix(path, ".pprof")+".txt", text, 0o600); err != nil {
		return 0, err
	}
	goroutines, err := o.get(ctx, o.pprof+"/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(strings.TrimSuffix(path, ".pprof")+"-goroutines.txt", goroutines, 0o600); err != nil {
		return 0, err
	}
	if heap := memStat(text, "HeapAlloc"); heap > 0 {
		return heap / (1 << 20), nil
	}
	return 0, errors.New("the heap profile has no HeapAlloc line")
}

// cpuTime returns the process's user plus system CPU time so far.
func (o *operatorProcess) cpuTime() (time.Duration, error) { return processCPUTime(o.proc.PID()) }

// planeCPUTime is the CPU time so far of the plane's processes together
// (etcd, kube-apiserver, the controller-manager, the scheduler, kwok): on a
// 2-core machine, what the cluster itself spent beside the operator.
func planeCPUTime(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		t, err := processCPUTime(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// processCPUTime returns a process's user plus system CPU time so far.
func processCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from after it.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(fields[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

func (o *operatorProcess) stop() error { return o.proc.Stop(40 * time.Second) }

// kill SIGKILLs the process, as a crash or the OOM killer would.
func (o *operatorProcess) kill() error { return o.proc.Kill() }

// installSampleEvery is how often sampleInstall looks at the heap, the
// pacing and the CPU times.
const installSampleEvery = 10 * time.Second

// sampleInstall looks at the process's heap and its rollout pacing every
// installSampleEvery until ctx ends, keeps the pacing's samples and highest
// values in pacing, and writes the profile (and its text form) of the moment the heap
// held the most spans to path: what the install wave keeps alive, which the
// idle heap's fragmentation comes from. Sampling errors end it quietly: the
// profile is a diagnosis, not a measurement.
func (o *operatorProcess) sampleInstall(ctx context.Context, path string, pacing *report.Pacing, planePIDs []int) {
	var peak float64
	var profile, text []byte
	began := time.Now()
	ticker := time.NewTicker(installSampleEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			if profile != nil {
				_ = os.WriteFile(path, profile, 0o600)
				_ = os.WriteFile(strings.TrimSuffix(path, ".pprof")+".txt", text, 0o600)
			}
			return
		case <-ticker.C:
		}
		if m, err := o.scrape(ctx); err == nil {
			sample := report.PacingSample{
				Seconds: time.Since(began).Seconds(),
				Limit:   m.sum("kraan_helmrelease_rollouts", map[string]string{"state": "limit"}),
				Rolling: m.sum("kraan_helmrelease_rollouts", map[string]string{"state": "rolling"}),
				Queued:  m.sum("kraan_helmrelease_rollouts", map[string]string{"state": "queued"}),
			}
			if cpu, err := o.cpuTime(); err == nil {
				sample.CPUSeconds = cpu.Seconds()
			}
			if cpu, err := planeCPUTime(planePIDs); err == nil {
				sample.PlaneCPUSeconds = cpu.Seconds()
			}
			pacing.Samples = append(pacing.Samples, sample)
			pacing.MaxLimit = max(pacing.MaxLimit, sample.Limit)
			pacing.MaxRolling = max(pacing.MaxRolling, sample.Rolling)
			pacing.MaxQueued = max(pacing.MaxQueued, sample.Queued)
		}
		t, err := o.get(ctx, o.pprof+"/heap?debug=1")
		if err != nil {
			continue
		}
		inuse := memStat(t, "HeapInuse")
		if inuse <= peak {
			continue
		}
		if p, err := o.get(ctx, o.pprof+"/heap"); err == nil {
			peak, profile, text = inuse, p, t
		}
	}
}

// memStat reads one "# Name = value" line of a heap profile's text form.
func memStat(text []byte, name string) float64 {
	for line := range strings.SplitSeq(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, "# "+name+" = "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}
