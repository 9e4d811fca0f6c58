package namespaced_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kraan-io/kraan-operator/internal/testenv"
)

// readyTimeout bounds the operator's start: the binary is built beforehand,
// so this is informer sync and leader election on a loaded machine.
const readyTimeout = 2 * time.Minute

// operator is the operator binary running as the overlay's ServiceAccount.
type operator struct {
	cmd     *exec.Cmd
	logPath string
	// probe is the address of /healthz and /readyz.
	probe string
	// exited is closed once the process has been reaped.
	exited chan struct{}
}

// startOperator builds ./cmd and runs it with the overlay Deployment's
// arguments and environment, authenticated by a token of the Deployment's
// ServiceAccount, and waits until it reports ready (its informers synced
// with the overlay's permissions).
func startOperator(ctx context.Context, cfg *rest.Config, in *install, work string) (*operator, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(work, "kraan-operator")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd: %w: %s", err, out)
	}
	kubeconfig := filepath.Join(work, "operator.kubeconfig")
	if err := writeServiceAccountKubeconfig(ctx, cfg, in, kubeconfig); err != nil {
		return nil, err
	}
	port, err := freePort(ctx)
	if err != nil {
		return nil, err
	}
	env, err := containerEnv(in)
	if err != nil {
		return nil, err
	}
	// The Deployment's own arguments first; later flags override earlier
	// ones. The overrides stand in for what the pod would provide: the
	// ServiceAccount's credentials and namespace, the watches file baked into
	// the image, and ports of our own.
	args := append(append([]string{}, in.container.Args...),
		"--kubeconfig="+kubeconfig,
		"--leader-election-namespace="+in.deployment.Namespace,
		"--watches-file="+filepath.Join(root, "watches.yaml"),
		"--metrics-bind-address=0",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", port),
		"--log-format=console")
	op := &operator{
		logPath: filepath.Join(work, "operator.log"),
		probe:   fmt.Sprintf("127.0.0.1:%d", port),
		exited:  make(chan struct{}),
	}
	if err := op.start(bin, args, env); err != nil {
		return nil, err
	}
	if err := op.waitReady(ctx); err != nil {
		_ = op.stop()
		return nil, fmt.Errorf("%w\n%s", err, op.logTail(40))
	}
	return op, nil
}

// start runs the binary in its own process group. Its parent-death signal
// fires when the OS thread that forked it ends, so the forking goroutine
// stays locked to its thread until the process is gone: the operator then
// dies with the test binary, even one killed by a timeout, and not before.
func (o *operator) start(bin string, args, env []string) error {
	logs, err := os.Create(o.logPath)
	if err != nil {
		return err
	}
	o.cmd = exec.CommandContext(context.Background(), bin, args...)
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
		close(o.exited)
	}()
	return <-started
}

// waitReady polls /readyz until it answers 200, the process exits or
// readyTimeout passes.
func (o *operator) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if o.ready(ctx) {
			return nil
		}
		select {
		case <-o.exited:
			return errors.New("the operator exited before it was ready")
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("the operator was not ready after %v", readyTimeout)
}

// ready reports whether /readyz answers 200.
func (o *operator) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.probe+"/readyz", http.NoBody)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode == http.StatusOK
}

// stop terminates the operator as the kubelet would: SIGTERM, then SIGKILL
// after the Deployment's grace period.
func (o *operator) stop() error {
	_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-o.exited:
		return nil
	case <-time.After(40 * time.Second):
	}
	_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
	<-o.exited
	return errors.New("the operator did not stop within 40s of SIGTERM")
}

// log returns the operator's log so far.
func (o *operator) log() string {
	data, err := os.ReadFile(o.logPath)
	if err != nil {
		return fmt.Sprintf("(no operator log: %v)", err)
	}
	return string(data)
}

// logTail returns the last n lines of the operator's log, for failures,
// without the lines our own /readyz polling causes.
func (o *operator) logTail(n int) string {
	var lines []string
	for line := range strings.SplitSeq(strings.TrimRight(o.log(), "\n"), "\n") {
		if !strings.Contains(line, "healthz check failed") {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- operator log (tail) ---\n" + strings.Join(lines, "\n")
}

// writeServiceAccountKubeconfig writes a kubeconfig holding a TokenRequest
// token of the Deployment's ServiceAccount: the operator then has exactly the
// overlay's permissions, as in its pod.
func writeServiceAccountKubeconfig(ctx context.Context, cfg *rest.Config, in *install, path string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, name := in.serviceAccount()
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", ns, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: "operator"}
	kc.CurrentContext = "operator"
	return clientcmd.WriteToFile(*kc, path)
}

// containerEnv turns the container's environment into the process's: plain
// values as they are, the pod's namespace as the Deployment's.
func containerEnv(in *install) ([]string, error) {
	var env []string
	for _, e := range in.container.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case isFieldRef(e.ValueFrom, "metadata.namespace"):
			env = append(env, e.Name+"="+in.deployment.Namespace)
		default:
			return nil, fmt.Errorf("the operator's container sets %s from a source the test cannot provide", e.Name)
		}
	}
	return env, nil
}

func isFieldRef(src *corev1.EnvVarSource, path string) bool {
	return src.FieldRef != nil && src.FieldRef.FieldPath == path
}

// freePort returns a loopback port nothing listens on.
func freePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
