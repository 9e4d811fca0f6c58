package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The pid file records the run process's pid and its start time (from
// /proc/<pid>/stat), so that a pid the kernel has since reused for an
// unrelated process is not mistaken for the plane (and sent SIGTERM).

// writePIDFile records the current process as the plane of dir.
func writePIDFile(dir string) error {
	pid := os.Getpid()
	start, _, err := procStat(pid)
	if err != nil {
		return err
	}
	content := fmt.Sprintf("%d %s\n", pid, start)
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(content), 0o600); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// proc identifies a process by pid and start time.
type proc struct {
	pid   int
	start string
}

// runningPlane returns the run process recorded in dir's pid file, if it is
// alive.
func runningPlane(dir string) (proc, bool) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return proc{}, false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return proc{}, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil {
		return proc{}, false
	}
	p := proc{pid: pid, start: fields[1]}
	return p, p.alive()
}

// alive reports whether the process runs, is not a zombie, and is the same
// process (same start time), not a later one that got the same pid.
func (p proc) alive() bool {
	start, state, err := procStat(p.pid)
	return err == nil && start == p.start && state != "Z" && state != "X"
}

// procStat returns the start time (clock ticks since boot) and the state
// letter of pid. A zombie counts as gone: after `up` exits, the run process
// is reparented to init, which may be slow (or fail) to reap it.
func procStat(pid int) (start, state string, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", "", fmt.Errorf("read process status: %w", err)
	}
	// "pid (comm) state ppid ..."; comm may contain spaces, so split after it.
	rest := string(data)
	rest = rest[strings.LastIndexByte(rest, ')')+1:]
	fields := strings.Fields(rest)
	const startTimeIndex = 19 // field 22 of proc(5), counted from state (field 3)
	if len(fields) <= startTimeIndex {
		return "", "", fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	return fields[startTimeIndex], fields[0], nil
}

// removeStateFiles removes the files that say a plane runs in dir.
func removeStateFiles(dir string) {
	_ = os.Remove(filepath.Join(dir, readyFile))
	_ = os.Remove(filepath.Join(dir, pidFile))
}
