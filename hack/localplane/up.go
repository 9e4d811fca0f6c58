package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// up starts `localplane run` detached from the caller (own session, output
// to <dir>/localplane.log) and returns once it is ready. Only the export
// line goes to stdout, so `eval "$(localplane up)"` works.
func up(args []string) error {
	f, err := parseFlags("up", "Start the control plane in the background and print the KUBECONFIG to use.", args, 3*time.Minute)
	if err != nil {
		return err
	}
	if p, ok := runningPlane(f.dir); ok {
		fmt.Fprintf(os.Stderr, "localplane: already running in %s (pid %d)\n", f.dir, p.pid)
		printExport(f.dir)
		return nil
	}
	removeStateFiles(f.dir)
	began := time.Now()
	cmd, exited, err := startDetached(f)
	if err != nil {
		return err
	}
	if err := waitReady(f, exited); err != nil {
		stopDetached(cmd, exited)
		return fmt.Errorf("%w\n%s", err, fileTail(filepath.Join(f.dir, logFile), 30))
	}
	fmt.Fprintf(os.Stderr, "localplane: ready in %v (pid %d, logs in %s)\n",
		time.Since(began).Round(time.Millisecond), cmd.Process.Pid, f.dir)
	printExport(f.dir)
	return nil
}

// startDetached re-executes this binary as `run` in a new session, so it
// survives this process and the terminal. It deliberately has no
// parent-death signal: this process exits right after.
func startDetached(f commonFlags) (*exec.Cmd, <-chan error, error) {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", f.dir, err)
	}
	out, err := os.Create(filepath.Join(f.dir, logFile))
	if err != nil {
		return nil, nil, fmt.Errorf("create log: %w", err)
	}
	defer func() { _ = out.Close() }() // the child has its own descriptor
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find own executable: %w", err)
	}
	// The run process outlives this command on purpose: no context ends it.
	cmd := exec.CommandContext(context.Background(), exe, "run", "--dir", f.dir, "--assets", f.assets, "--timeout", f.timeout.String())
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s run: %w", exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, exited, nil
}

// waitReady polls for the ready file until the run process exits or the
// timeout passes.
func waitReady(f commonFlags, exited <-chan error) error {
	deadline := time.After(f.timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(f.dir, readyFile)); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("localplane run exited before it was ready: %w", err)
		case <-deadline:
			return fmt.Errorf("localplane run not ready after %v", f.timeout)
		case <-tick.C:
		}
	}
}

// stopDetached asks a run process that failed to get ready to stop its
// components, and waits a while for it.
func stopDetached(cmd *exec.Cmd, exited <-chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		fmt.Fprintf(os.Stderr, "localplane: run process stopped: %v\n", err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill() // its components die with it (parent-death signal)
	}
}

func printExport(dir string) {
	fmt.Printf("export KUBECONFIG=%s\n", filepath.Join(dir, "kubeconfig"))
}

// fileTail returns the last n lines of path, for error messages.
func fileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, errors.Unwrap(err))
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return fmt.Sprintf("--- last lines of %s ---\n%s", path, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}
