package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// down stops the run process of a directory: SIGTERM, which makes it stop
// its components cleanly, then SIGKILL if it does not finish in time (its
// components then die by their parent-death signal).
func down(args []string) error {
	f, err := parseFlags("down", "Stop the control plane started by 'localplane up' in --dir.", args, time.Minute)
	if err != nil {
		return err
	}
	p, ok := runningPlane(f.dir)
	if !ok {
		removeStateFiles(f.dir)
		fmt.Fprintf(os.Stderr, "localplane: not running in %s\n", f.dir)
		return nil
	}
	began := time.Now()
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal pid %d: %w", p.pid, err)
	}
	if !waitGone(p, f.timeout) {
		fmt.Fprintf(os.Stderr, "localplane: pid %d still running after %v, sending SIGKILL\n", p.pid, f.timeout)
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		if !waitGone(p, 10*time.Second) {
			return fmt.Errorf("pid %d survived SIGKILL", p.pid)
		}
	}
	removeStateFiles(f.dir)
	fmt.Fprintf(os.Stderr, "localplane: stopped in %v\n", time.Since(began).Round(time.Millisecond))
	return nil
}

// waitGone polls until p has exited or timeout passes; it is not our child,
// so there is nothing to wait on but /proc.
func waitGone(p proc, timeout time.Duration) bool {
	deadline := time.After(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for p.alive() {
		select {
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
	return true
}
