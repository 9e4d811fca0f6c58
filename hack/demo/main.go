// Command demo is `make demo`: it starts a local control plane with Flux
// source-controller, a Git server, a Helm repository and the operator, deploys
// the four layers of examples/layers from Git (HelmReleases, and a Habitat in
// the apps layer), shows them rolling out live, commits version 0.2.0 (which
// moves a release from one layer to another and changes a value), shows that
// rollout, checks the Habitat's supervisors run, then leaves everything
// running until Ctrl-C. With --non-interactive it exits after that, with
// status 0 only if everything reached Deployed and Ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kraan-io/kraan-operator/test/env"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// options are the command line flags.
type options struct {
	nonInteractive bool
	timeout        time.Duration // per rollout
	keep           bool          // keep the temporary directory
}

func main() { os.Exit(mainStatus()) }

// mainStatus parses the flags, runs the demo and returns the exit status;
// separate from main so that deferred calls run before os.Exit.
func mainStatus() int {
	var o options
	flag.BoolVar(&o.nonInteractive, "non-interactive", false, "exit after the second rollout instead of waiting for Ctrl-C; exit status 0 only if everything reached Deployed/Ready")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long each rollout may take")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, Git repository) after exiting")
	flag.Parse()
	// Ctrl-C cancels ctx: every step returns and the deferred Stop ends every process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	return 0
}

// run is the whole demo; it stops everything it started before returning.
func run(ctx context.Context, out io.Writer, o options) (err error) {
	start := time.Now()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kraan-demo-")
	if err != nil {
		return err
	}
	// A failure keeps the directory for its logs; Ctrl-C never does, since
	// the user asked for everything to go away.
	defer func() { err = errors.Join(err, cleanup(out, dir, o.keep || (err != nil && ctx.Err() == nil))) }()
	fmt.Fprintf(out, "kraan-operator demo, working directory %s\n", dir)
	p := newProgress(out)
	e, err := startEnv(ctx, p, dir)
	if err != nil {
		return err
	}
	defer func() {
		p.step("stopping every process")
		err = errors.Join(err, e.Stop())
		p.done()
	}()
	d := &demo{env: e, out: out, root: root, progress: p, timeout: o.timeout}
	if err := d.publishCharts(); err != nil {
		return err
	}
	if err := d.rollout(ctx, "0.1.0", "the four layers of examples/layers, apps with a Habitat"); err != nil {
		return err
	}
	if err := d.rollout(ctx, "0.2.0", "0.2.0 moves the release monitoring/logging from mgmt to base and changes its message"); err != nil {
		return err
	}
	if err := d.checkHandOver(ctx); err != nil {
		return err
	}
	if err := d.checkHabitats(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "The demo took %s from start to here.\n", roundDuration(time.Since(start)))
	printUsage(out, e)
	if o.nonInteractive {
		return nil
	}
	fmt.Fprintln(out, "Press Ctrl-C to stop every process and remove", dir)
	<-ctx.Done()
	fmt.Fprintln(out)
	return nil
}

// startEnv starts the environment, printing each step with its duration.
func startEnv(ctx context.Context, p *progress, dir string) (*env.Env, error) {
	o, err := env.OptionsFromEnv(dir)
	if err != nil {
		return nil, err
	}
	o.Progress = p.step
	e, err := env.Start(ctx, o)
	p.done()
	if err != nil {
		return nil, fmt.Errorf("starting the environment (logs in %s): %w", dir, err)
	}
	return e, nil
}

// cleanup removes dir, or says where it is when keep is set (on failure, for
// the logs).
func cleanup(out io.Writer, dir string, keep bool) error {
	if keep {
		fmt.Fprintf(out, "Logs and state kept in %s (operator.log, source-controller.log, plane/)\n", dir)
		return nil
	}
	return os.RemoveAll(dir)
}

// printUsage tells how to look at the running environment.
func printUsage(out io.Writer, e *env.Env) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	fmt.Fprintf(out, `
The environment is running. In another terminal:

  export KUBECONFIG=%s
  %s get kraan -A
  %s get statefulsets,pods -n apps
  %s get gitrepositories -n %s

The Git repository is served at %s and the Helm repository at %s.

Try the kubectl plugin (docs/kubectl-plugin.md): build it with `+"`make plugin`"+`, then

  export PATH=$PWD/bin:$PATH
  %s kraan get layers
  %s kraan tree layer apps
  %s kraan graph -o svg > layers.svg
  %s kraan trace -n apps configmap/shop
  %s kraan diff layer mgmt
`, e.Kubeconfig, kubectl, kubectl, kubectl, env.FluxNamespace, e.GitURL, e.HelmURL, kubectl, kubectl, kubectl, kubectl, kubectl)
}
