package localplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Options configures Start. The zero value is usable when KUBEBUILDER_ASSETS
// is set.
type Options struct {
	// AssetsDir holds the binaries and kwok-stages.yaml. Default:
	// $KUBEBUILDER_ASSETS. Start fails (it does not skip) when it is empty or
	// incomplete, naming what is missing.
	AssetsDir string
	// Dir is the working directory for certificates, etcd data, logs
	// (<Dir>/<component>.log) and the admin kubeconfig (<Dir>/kubeconfig).
	// It is created if missing, and kept by Stop. Start replaces
	// etcd data and certificates a previous plane left there, so each plane
	// starts empty. Default: a new temporary directory, removed by a Stop
	// that succeeds.
	Dir string
	// Logs, if not nil, also receives every component's output, each line
	// prefixed with "[component] ". The output always goes to
	// <Dir>/<component>.log as well.
	Logs io.Writer
	// ControllerManagerArgs are added to kube-controller-manager's flags: a
	// throttled plane (--kube-api-qps=5) rolls Deployments out as a busy
	// cluster does, one shared backlog.
	ControllerManagerArgs []string
}

// Plane is a running control plane. Its methods are safe for concurrent use.
type Plane struct {
	dir    string
	ownDir bool // Dir was created by Start: Stop removes it
	assets string
	logs   io.Writer
	// controllerManagerArgs are Options.ControllerManagerArgs.
	controllerManagerArgs []string

	spawner  *spawner
	children []*child
	cfg      *rest.Config
	// apiserverArgs are kube-apiserver's flags, kept for RestartAPIServer:
	// the same port, certificates and etcd, so clients keep working.
	apiserverArgs []string
	restartMu     sync.Mutex // one RestartAPIServer at a time
	restarts      int        // of kube-apiserver, numbering its old logs; guarded by restartMu

	mu       sync.Mutex // guards children
	stopOnce sync.Once
	stopErr  error
}

// Timeouts of the start-up phases; generous because a loaded two-core
// machine can be several times slower than an idle one.
const (
	apiserverTimeout = 90 * time.Second
	workloadTimeout  = 90 * time.Second
	stopGrace        = 10 * time.Second
)

// Start runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok, creates the fake Node (NodeName) and returns once that Node is
// Ready and schedulable and the default ServiceAccount exists, that is, once
// Pods can be created and will run. ctx bounds start-up only; the plane runs
// until Stop. If any step fails, everything already started is stopped and
// the directory is kept for its logs.
func Start(ctx context.Context, opts Options) (*Plane, error) {
	p, err := newPlane(opts)
	if err != nil {
		return nil, err
	}
	if err := p.start(ctx); err != nil {
		stopErr := p.stopAll()
		return nil, fmt.Errorf("localplane: start (logs in %s): %w", p.dir, errors.Join(err, stopErr))
	}
	return p, nil
}

func newPlane(opts Options) (*Plane, error) {
	assets, err := resolveAssets(opts.AssetsDir)
	if err != nil {
		return nil, err
	}
	p := &Plane{dir: opts.Dir, assets: assets, logs: opts.Logs, controllerManagerArgs: opts.ControllerManagerArgs}
	if p.dir == "" {
		if p.dir, err = os.MkdirTemp("", "localplane-"); err != nil {
			return nil, fmt.Errorf("localplane: create working directory: %w", err)
		}
		p.ownDir = true
	}
	if p.dir, err = filepath.Abs(p.dir); err != nil {
		return nil, fmt.Errorf("localplane: working directory: %w", err)
	}
	if err := prepareDir(p.dir); err != nil {
		return nil, err
	}
	p.spawner = newSpawner()
	return p, nil
}

// prepareDir creates dir and removes state a previous plane left in it.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("localplane: create %s: %w", dir, err)
	}
	for _, name := range []string{etcdDataDir, certDir, caFile, kubeconfigFile} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("localplane: clean %s: %w", dir, err)
		}
	}
	return nil
}

// start brings the components up in dependency order. Credentials and
// ports come first so that etcd and the apiserver start back to back (the
// apiserver retries etcd until it answers) and the ports are bound soon
// after they were chosen.
func (p *Plane) start(ctx context.Context) error {
	token, err := writeCredentials(p.dir)
	if err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdPort, etcdPeerPort, apiserverPort := ports[0], ports[1], ports[2]
	if err := p.run(etcdBin, nil, etcdArgs(p.dir, etcdPort, etcdPeerPort)); err != nil {
		return err
	}
	if err := p.startAPIServer(ctx, etcdPort, apiserverPort, token); err != nil {
		return err
	}
	if err := p.startControllers(); err != nil {
		return err
	}
	return p.waitForWorkloads(ctx)
}

// startAPIServer starts kube-apiserver and waits until it is ready, then
// writes the CA and the admin kubeconfig the other components use.
func (p *Plane) startAPIServer(ctx context.Context, etcdPort, port int, token string) error {
	p.apiserverArgs = apiserverArgs(p.dir, etcdPort, port)
	if err := p.run(apiserverBin, nil, p.apiserverArgs); err != nil {
		return err
	}
	if err := p.waitForAPIServer(ctx, loopbackURL("https", port), token); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.dir, caFile), p.cfg.CAData, 0o600); err != nil {
		return fmt.Errorf("write CA: %w", err)
	}
	return writeKubeconfig(p.Kubeconfig(), p.cfg)
}

// startControllers starts the components that only need the kubeconfig;
// they wait for the apiserver themselves, so they start together.
func (p *Plane) startControllers() error {
	if err := p.run(ctrlMgrBin, nil, append(controllerManagerArgs(p.dir), p.controllerManagerArgs...)); err != nil {
		return err
	}
	if err := p.run(schedulerBin, nil, schedulerArgs(p.dir)); err != nil {
		return err
	}
	return p.run(kwokBin, kwokEnv(p.dir), kwokArgs(p.dir, p.assets))
}

// run starts one component from the assets directory.
func (p *Plane) run(name string, env, args []string) error {
	c, err := startChild(p.spawner, p.dir, name, p.logs, env, filepath.Join(p.assets, name), args...)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.children = append(p.children, c)
	p.mu.Unlock()
	return nil
}

// Dir returns the working directory (logs are <Dir>/<component>.log).
func (p *Plane) Dir() string { return p.dir }

// Kubeconfig returns the path of the admin kubeconfig written in Dir.
func (p *Plane) Kubeconfig() string { return filepath.Join(p.dir, kubeconfigFile) }

// RESTConfig returns a new copy of the admin client configuration
// (group system:masters; TLS verified against the CA the apiserver generated,
// also written to <Dir>/ca.crt).
func (p *Plane) RESTConfig() *rest.Config { return rest.CopyConfig(p.cfg) }

// PIDs returns the process ids of all components started, so tests can
// check that none outlives Stop.
func (p *Plane) PIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	pids := make([]int, 0, len(p.children))
	for _, c := range p.children {
		pids = append(pids, c.pid())
	}
	return pids
}

// Stop terminates every component (SIGTERM to its process group, SIGKILL
// after a grace period), waits until each has exited and been reaped, and
// returns an error if any is still alive. It is idempotent and safe to call
// concurrently: later calls wait for and return the first call's result. On
// success it removes Dir if Start created it.
func (p *Plane) Stop() error {
	p.stopOnce.Do(func() {
		p.stopErr = p.stopAll()
		if p.stopErr == nil && p.ownDir {
			p.stopErr = os.RemoveAll(p.dir)
		}
	})
	return p.stopErr
}

// stopAll stops the components in reverse start order: clients before the
// apiserver, the apiserver before etcd, so none spends its grace period
// retrying a dependency that is already gone.
func (p *Plane) stopAll() error {
	p.mu.Lock()
	children := p.children
	p.mu.Unlock()
	var errs []error
	for i := len(children) - 1; i >= 0; i-- {
		if err := children[i].stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	p.spawner.close()
	for _, c := range children {
		if err := syscall.Kill(c.pid(), 0); !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("%s (pid %d) still alive after stop", c.name, c.pid()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("localplane: stop: %w", err)
	}
	return nil
}
