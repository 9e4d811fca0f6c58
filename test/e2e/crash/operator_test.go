package crash_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Deadlines of the operator process's life cycle. Start is informer sync on a
// loaded machine; stop is the operator's --graceful-shutdown-timeout (30s)
// and some.
const (
	operatorStartTimeout = 2 * time.Minute
	operatorStopTimeout  = 45 * time.Second
	operatorLogTail      = 80
)

// operator is one run of the operator binary. The approach is
// test/e2e/habitat/namespaced's (a process group, a parent-death signal from
// a locked thread, the log in a file), with the admin kubeconfig and leader
// election instead of a ServiceAccount's token.
type operator struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	probe   string
	// exited is closed once the process has been reaped; state is then set.
	exited chan struct{}
	state  *os.ProcessState
}

// startOperator starts the operator binary against the plane and waits until
// its informers have synced (/readyz). Leader election may still hold it
// back: a Lease left by a killed predecessor expires first. When the test
// ends the process is stopped, if still running, and a failed test prints
// the tail of its log.
func startOperator(t *testing.T, name string) *operator {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	op := &operator{
		name:    name,
		logPath: filepath.Join(dir, name+".log"),
		probe:   fmt.Sprintf("127.0.0.1:%d", port),
		exited:  make(chan struct{}),
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect",
		"--leader-election-namespace=" + leaseNamespace,
		"--watches-file=" + filepath.Join(repoRoot, "watches.yaml"),
		"--data-path=" + filepath.Join(dir, "data"),
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + op.probe,
		"--log-format=console",
		"--log-level=debug", // Helm's own log: what it was waiting for when killed
	}
	// TMPDIR keeps the chart artifact store of each process in the test's
	// directory, not in a /tmp shared with other suites.
	NewWithT(t).Expect(op.start(args, []string{"TMPDIR=" + dir})).To(Succeed())
	t.Cleanup(func() {
		op.stop(t)
		if t.Failed() {
			t.Log(op.logTail(operatorLogTail))
		}
	})
	NewWithT(t).Eventually(op.ready).WithContext(t.Context()).
		WithTimeout(operatorStartTimeout).WithPolling(time.Second).
		Should(Succeed(), "the operator %s did not report ready", name)
	return op
}

// start runs the binary in its own process group with a parent-death signal.
// The signal fires when the forking OS thread ends, so the goroutine that
// forks stays locked to its thread until the process has been reaped.
func (o *operator) start(args, env []string) error {
	logs, err := os.Create(o.logPath)
	if err != nil {
		return err
	}
	o.cmd = exec.CommandContext(context.Background(), operatorBinary, args...)
	o.cmd.Env = append(os.Environ(), env...)
	o.cmd.Stdout, o.cmd.Stderr = logs, logs
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		defer func() { _ = logs.Close() }()
		if err := o.cmd.Start(); err != nil {
			started <- fmt.Errorf("starting the operator: %w", err)
			return
		}
		started <- nil
		_ = o.cmd.Wait()
		o.state = o.cmd.ProcessState
		close(o.exited)
	}()
	return <-started
}

// ready fails until /readyz answers 200, and for good once the process exited.
func (o *operator) ready(g Gomega) {
	select {
	case <-o.exited:
		StopTrying("the operator exited: " + o.state.String()).Now()
	default:
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+o.probe+"/readyz", http.NoBody)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := probeClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// kill sends SIGKILL to the operator process (not a graceful stop: no
// deferred status patch, no Lease release, no Helm cleanup runs), waits until
// it is reaped and checks that the signal is what ended it.
func (o *operator) kill(t *testing.T) time.Time {
	t.Helper()
	g := NewWithT(t)
	g.Expect(syscall.Kill(o.cmd.Process.Pid, syscall.SIGKILL)).To(Succeed())
	killedAt := time.Now()
	g.Eventually(o.exited).WithTimeout(10 * time.Second).Should(BeClosed())
	status, ok := o.state.Sys().(syscall.WaitStatus)
	g.Expect(ok).To(BeTrue())
	g.Expect(status.Signaled() && status.Signal() == syscall.SIGKILL).To(BeTrue(),
		"the operator ended otherwise than by SIGKILL: %s", o.state)
	return killedAt
}

// stop terminates a running operator as the kubelet would: SIGTERM to its
// process group, SIGKILL if it is still there after operatorStopTimeout.
func (o *operator) stop(t *testing.T) {
	select {
	case <-o.exited:
		return
	default:
	}
	_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-o.exited:
		return
	case <-time.After(operatorStopTimeout):
	}
	_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
	<-o.exited
	t.Errorf("the operator %s did not stop within %v of SIGTERM", o.name, operatorStopTimeout)
}

// logTail returns the last n lines of the operator's log, without the
// lines our /readyz polling causes.
func (o *operator) logTail(n int) string {
	data, err := os.ReadFile(o.logPath)
	if err != nil {
		return fmt.Sprintf("(no log of the operator %s: %v)", o.name, err)
	}
	var lines []string
	for line := range strings.SplitSeq(strings.TrimRight(string(data), "\n"), "\n") {
		if !strings.Contains(line, "healthz check failed") {
			lines = append(lines, line)
		}
	}
	lines = lines[max(0, len(lines)-n):]
	return fmt.Sprintf("--- log of the operator %s (%s), last %d lines ---\n%s",
		o.name, o.logPath, len(lines), strings.Join(lines, "\n"))
}

// leaseName is the operator's leader election Lease (cmd/main.go).
const leaseName = "kraan-operator.kraan.io"

// leaseHolder returns who holds the operator's Lease, or fails g.
func leaseHolder(g Gomega) string {
	lease := &coordinationv1.Lease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: leaseNamespace, Name: leaseName}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
	return *lease.Spec.HolderIdentity
}

// waitTakeover waits until a process other than the killed holder leads,
// and logs how long after the kill that was: the Lease's expiry dominates
// the recovery time.
func waitTakeover(t *testing.T, killed string, killedAt time.Time) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(leaseHolder(g)).NotTo(Equal(killed))
	}).WithTimeout(operatorStartTimeout).WithPolling(interval).Should(Succeed())
	t.Logf("A new operator leads %v after the kill", time.Since(killedAt).Round(time.Millisecond))
}

// probeClient bounds each /readyz request: a process that stopped answering
// must not hang the poll past its deadline.
var probeClient = &http.Client{Timeout: 5 * time.Second}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
