package suite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// Deadlines of an operator process's life cycle. Start is informer sync and
// leader election on a loaded machine; stop is config/manager's
// terminationGracePeriodSeconds, which leaves room for the operator's
// --graceful-shutdown-timeout (30s).
const (
	OperatorStartTimeout = 2 * time.Minute
	OperatorStopTimeout  = 40 * time.Second
)

// probeNoise is in the operator's log once per /readyz request that fails
// while it starts: StartOperator's polling, not the operator's doing.
const probeNoise = "healthz check failed"

// probeClient bounds each /readyz request: a process that stopped answering
// must not hang the poll past its deadline.
var probeClient = &http.Client{Timeout: 5 * time.Second}

// BuildOperator builds the operator binary, ./cmd, into dir and returns its
// path.
func BuildOperator(ctx context.Context, dir string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return goBuild(ctx, root, filepath.Join(dir, "kraan-operator"), "./cmd")
}

// BuildPlugin builds the kubectl plugin, ./cmd/kubectl-kraan, into dir
// and returns its path: with dir on PATH, `kubectl kraan` runs it, as the
// guides say.
func BuildPlugin(ctx context.Context, dir string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return goBuild(ctx, root, filepath.Join(dir, "kubectl-kraan"), "./cmd/kubectl-kraan")
}

// BuildReleasedOperator builds the operator of the released version
// (bundle-history/<version>, committed as the Makefile's BUNDLE_HISTORY
// says) from that commit's source, with that commit's go.mod, into dir, and
// returns its path: the upgrade test starts from what users run, not from
// this tree. The commit must be in the repository's history (a shallow
// clone lacks it: git fetch --unshallow).
func BuildReleasedOperator(ctx context.Context, dir, version string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^BUNDLE_HISTORY :=.*\b` + regexp.QuoteMeta(version) + `=([0-9a-f]{40})\b`).FindSubmatch(makefile)
	if m == nil {
		return "", fmt.Errorf("the Makefile's BUNDLE_HISTORY names no commit for %s", version)
	}
	commit := string(m[1])
	src := filepath.Join(dir, "src-"+version)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", root, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("reading commit %s of %s (a shallow clone lacks it: git fetch --unshallow): %w: %s", commit, version, err, out)
	}
	return goBuild(ctx, src, filepath.Join(dir, "kraan-operator-"+version), "./cmd")
}

// goBuild builds pkg of the module in dir into bin.
func goBuild(ctx context.Context, dir, bin, pkg string) (string, error) {
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w: %s", pkg, dir, err, out)
	}
	return bin, nil
}

// OperatorProcess says how StartOperator runs the operator binary.
type OperatorProcess struct {
	// Name names the process in messages and its log, <Dir>/<Name>.log.
	Name string
	// Binary is the operator binary (BuildOperator).
	Binary string
	// Kubeconfig is the kubeconfig the operator authenticates with.
	Kubeconfig string
	// Dir holds the log and the process's files: --data-path=<Dir>/data and
	// TMPDIR=<Dir>/tmp, so that the chart artifact store is not in a /tmp
	// shared with other suites and processes. It must exist.
	Dir string
	// Args come before the flags StartOperator sets, which win over them.
	Args []string
	// Env is added to the test process's environment.
	Env []string
	// Lockdown keeps the operator's --multi-tenancy-lockdown default. Off
	// (most tests), the process starts with --multi-tenancy-lockdown=false:
	// those tests create HelmReleases in namespaces of their own as the
	// cluster admin would in platform namespaces, and are about something
	// else than who a tenant's release acts as.
	Lockdown bool
}

// RunningOperator is an operator process StartOperator started.
type RunningOperator struct {
	name  string
	proc  *localplane.Process
	probe string // address of /healthz and /readyz
}

// StartOperator runs the operator binary as a separate process, as
// localplane runs the plane's components (its own process group, dying with
// the test binary), and waits until it reports ready: its informers have
// synced, which leader election may delay. ctx bounds that wait only.
//
// Besides p.Args it passes what the operator's pod would provide: the
// kubeconfig, the watches file baked into the image (the repository's
// watches.yaml), the data path, and ports of its own (no metrics listener, the
// probes on a free loopback port); the log is in console format. When the
// operator does not become ready, StartOperator stops it and returns an error
// with the tail of its log.
func StartOperator(ctx context.Context, p OperatorProcess) (*RunningOperator, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	port, err := localplane.FreePort()
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(p.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	op := &RunningOperator{name: p.Name, probe: fmt.Sprintf("127.0.0.1:%d", port)}
	args := append(append([]string{}, p.Args...),
		"--kubeconfig="+p.Kubeconfig,
		"--watches-file="+filepath.Join(root, "watches.yaml"),
		"--data-path="+filepath.Join(p.Dir, "data"),
		"--metrics-bind-address=0",
		"--health-probe-bind-address="+op.probe,
		"--log-format=console")
	args = append(args, recordKeyNamespaceArgs(p)...)
	if !p.Lockdown {
		args = append(args, "--multi-tenancy-lockdown=false")
	}
	op.proc, err = localplane.StartProcess(localplane.ProcessOptions{
		Name: p.Name, Dir: p.Dir, Binary: p.Binary, Args: args,
		Env: append(append([]string{}, p.Env...), "TMPDIR="+tmp),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the operator %s: %w", p.Name, err)
	}
	if err := op.waitReady(ctx); err != nil {
		return nil, errors.Join(err, op.Stop(), errors.New(op.LogTail(40)))
	}
	return op, nil
}

// waitReady polls /readyz until it answers 200, the process exits,
// OperatorStartTimeout passes or ctx ends.
func (o *RunningOperator) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, OperatorStartTimeout)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !o.Ready(ctx) {
		select {
		case <-o.proc.Exited():
			return fmt.Errorf("the operator %s exited before it was ready: %s", o.name, o.proc.State())
		case <-ctx.Done():
			return fmt.Errorf("the operator %s was not ready: %w", o.name, context.Cause(ctx))
		case <-tick.C:
		}
	}
	return nil
}

// Ready reports whether the operator's /readyz answers 200.
func (o *RunningOperator) Ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.probe+"/readyz", http.NoBody)
	if err != nil {
		return false
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode == http.StatusOK
}

// Stop terminates the operator as the kubelet would: SIGTERM to its process
// group, SIGKILL after OperatorStopTimeout, which is an error. Stopping an
// operator that has exited does nothing and returns nil.
func (o *RunningOperator) Stop() error {
	return o.proc.Stop(OperatorStopTimeout)
}

// Kill sends SIGKILL to the operator process: no graceful stop, so no
// deferred status patch, no Lease release, no Helm clean-up runs. It waits
// until the process has been reaped and returns an error unless the signal
// is what ended it.
func (o *RunningOperator) Kill() error {
	if err := o.proc.Kill(); err != nil {
		return err
	}
	state := o.proc.State()
	if status, ok := state.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		return fmt.Errorf("the operator %s ended otherwise than by SIGKILL: %s", o.name, state)
	}
	return nil
}

// Exited is closed once the process has exited, whatever ended it, and been
// reaped: a supervisor restarts an operator that stopped on its own, as the
// kubelet does.
func (o *RunningOperator) Exited() <-chan struct{} { return o.proc.Exited() }

// State returns how the process exited; nil while it runs.
func (o *RunningOperator) State() *os.ProcessState { return o.proc.State() }

// Name is the name StartOperator was given.
func (o *RunningOperator) Name() string { return o.name }

// LogPath is the file the operator logs to.
func (o *RunningOperator) LogPath() string { return o.proc.LogPath() }

// Log returns what the process has logged so far.
func (o *RunningOperator) Log() string {
	data, err := os.ReadFile(o.proc.LogPath())
	if err != nil {
		return fmt.Sprintf("(no log of the operator %s: %v)", o.name, err)
	}
	return string(data)
}

// LogTail returns the last n lines of the operator's log, for failures,
// without the lines StartOperator's /readyz polling causes.
func (o *RunningOperator) LogTail(n int) string {
	return o.proc.LogTail(n, probeNoise)
}

// PrepareOperatorBinary is the set-up of a suite that runs the operator
// binary itself: it builds ./cmd into a temporary directory removed when the
// suite ends, and creates leaseNamespace for the processes' leader election
// Leases. It returns the binary's path.
func PrepareOperatorBinary(s *Suite, leaseNamespace string) (string, error) {
	work, err := os.MkdirTemp("", "kraan-e2e-operator-")
	if err != nil {
		return "", err
	}
	s.Cleanup(func(int) { _ = os.RemoveAll(work) })
	bin, err := BuildOperator(s.Context(), work)
	if err != nil {
		return "", err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}
	if err := s.Client.Create(s.Context(), ns); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", leaseNamespace, err)
	}
	return bin, nil
}

// recordKeyNamespaceArgs names a namespace for the operator's release record
// key when nothing else does: a pod has its own namespace, a process on the
// test machine has none. The operator otherwise keeps the key in its leader
// election namespace or $RUNTIME_NAMESPACE, as in a pod.
func recordKeyNamespaceArgs(p OperatorProcess) []string {
	for _, a := range p.Args {
		if strings.HasPrefix(a, "--leader-election-namespace=") || strings.HasPrefix(a, "--release-record-key-namespace=") {
			return nil
		}
	}
	for _, e := range p.Env {
		if strings.HasPrefix(e, "RUNTIME_NAMESPACE=") {
			return nil
		}
	}
	return []string{"--release-record-key-namespace=default"}
}
