// Command localplane starts and stops a local Kubernetes control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with
// one fake Node) for people, as `make cluster-up` and `make cluster-down`.
// Tests use the package test/localplane directly.
//
//	localplane up   --dir DIR   start in the background, print the KUBECONFIG line
//	localplane down --dir DIR   stop what `up` started
//	localplane run  --dir DIR   run in the foreground until SIGINT or SIGTERM
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const usage = `Usage: localplane <command> [flags]

Runs a local Kubernetes control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok with the fake Node kwok-node-0),
listening on 127.0.0.1 only.

Commands:
  up     start the plane in the background and print the KUBECONFIG to use;
         does nothing if it already runs in --dir
  down   stop the plane started in --dir; does nothing if none runs
  run    run the plane in the foreground until SIGINT or SIGTERM

Run 'localplane <command> -h' for the flags of a command.
`

// Files in the plane's directory, besides those of test/localplane.
const (
	pidFile   = "pid"            // "<pid> <start time>" of the run process
	readyFile = "ready"          // written by run once the plane is ready
	logFile   = "localplane.log" // output of a run process started by up
)

// errUsage reports bad command-line use; the message was already printed.
var errUsage = errors.New("usage")

func main() {
	err := dispatch(os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		msg := err.Error()
		if !strings.HasPrefix(msg, "localplane") { // library errors already say it
			msg = "localplane: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

func dispatch(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "up":
		return up(args[1:])
	case "down":
		return down(args[1:])
	case "run":
		return run(args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return nil
	default:
		fmt.Fprintf(os.Stderr, "localplane: unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
}

// commonFlags are the flags every command takes.
type commonFlags struct {
	dir     string
	assets  string
	timeout time.Duration
}

// parseFlags parses args for command; timeout is the default of --timeout.
func parseFlags(command, summary string, args []string, timeout time.Duration) (commonFlags, error) {
	var f commonFlags
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: localplane %s [flags]\n\n%s\n\nFlags:\n", command, summary)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.dir, "dir", filepath.Join(os.TempDir(), "kraan-localplane"),
		"working directory: kubeconfig, logs, certificates, etcd data")
	fs.StringVar(&f.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"),
		"directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, kwok-stages.yaml")
	fs.DurationVar(&f.timeout, "timeout", timeout, "how long to wait before giving up")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, err
		}
		return f, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "localplane %s: unexpected arguments %q\n", command, fs.Args())
		return f, errUsage
	}
	dir, err := filepath.Abs(f.dir)
	if err != nil {
		return f, fmt.Errorf("--dir %s: %w", f.dir, err)
	}
	f.dir = dir
	return f, nil
}
