package localplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// spawner forks child processes from a single goroutine locked to its OS
// thread. Pdeathsig fires when the forking thread exits; keeping that thread
// reserved (no other goroutine can run on a locked thread, so nothing else
// can make the runtime end it) ties the children to the life of the process
// until close is called.
type spawner struct {
	reqs chan func()
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan func())}
	go s.loop()
	return s
}

// loop runs start requests on the locked thread. It never unlocks: when it
// returns the runtime terminates the thread, which SIGKILLs any child still
// alive, a last resort that only matters if Stop could not kill a child.
func (s *spawner) loop() {
	runtime.LockOSThread()
	for f := range s.reqs {
		f()
	}
}

// start runs cmd.Start on the locked thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// close ends the locked goroutine; call it once every child has exited.
func (s *spawner) close() { close(s.reqs) }

// child is one running component.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	exited  chan struct{} // closed once cmd.Wait has returned
	waitErr error         // valid after exited is closed
}

// startChild starts bin with args through s. Output goes to <dir>/<name>.log
// and, if logs is not nil, also to logs with a "[name] " prefix on each line.
func startChild(s *spawner, dir, name string, logs io.Writer, env []string, bin string, args ...string) (*child, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	// Components live until Stop, not until a context ends: Stop signals their
	// process groups, and the parent-death signal covers a crashed test.
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = outputFor(f, name, logs)
	// A grandchild holding our output pipe must not block Wait forever.
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.start(cmd); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, logFile: f, exited: make(chan struct{})}
	go c.wait()
	return c, nil
}

// outputFor hands the log file itself to the child when there is no extra
// writer, so the child writes directly (no copying goroutine, and the log
// survives even if this process dies first).
func outputFor(f *os.File, name string, logs io.Writer) (io.Writer, io.Writer) {
	if logs == nil {
		return f, f
	}
	w := io.MultiWriter(f, newPrefixWriter(logs, "["+name+"] "))
	return w, w
}

func (c *child) wait() {
	c.waitErr = c.cmd.Wait()
	_ = c.logFile.Close()
	close(c.exited)
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// hasExited reports whether the child has exited (and been reaped).
func (c *child) hasExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// exitError describes an unexpected exit, with the tail of the log.
func (c *child) exitError() error {
	return fmt.Errorf("%s exited: %w\n%s", c.name, c.waitErr, logTail(c.logPath, 30))
}

// reapTimeout bounds the wait for a SIGKILLed child to be reaped.
const reapTimeout = 10 * time.Second

// stop sends SIGTERM to the child's process group, then SIGKILL after grace,
// and waits for the child to be reaped. It returns an error if the child is
// still alive after that.
func (c *child) stop(grace time.Duration) error {
	c.terminate(grace)
	return c.killGroup()
}

// terminate sends SIGTERM to the child's process group, unless the child has
// exited, and reports whether it exited within grace.
func (c *child) terminate(grace time.Duration) bool {
	if c.hasExited() {
		return true
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
	select {
	case <-c.exited:
		return true
	case <-time.After(grace):
		return false
	}
}

// killGroup sends SIGKILL to the child's process group, even after a clean
// exit: it removes any process the child left behind in its group. ESRCH
// (nothing left) is the normal case. It waits for the child to be reaped.
func (c *child) killGroup() error {
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	return c.reaped()
}

// reaped waits for the child to be reaped after a SIGKILL.
func (c *child) reaped() error {
	select {
	case <-c.exited:
		return nil
	case <-time.After(reapTimeout):
		return fmt.Errorf("%s (pid %d) still alive after SIGKILL", c.name, c.pid())
	}
}

// logTail returns the last n lines of a log file, for error messages,
// leaving out the lines that contain any of omit.
func logTail(path string, n int, omit ...string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	var lines []string
	for line := range strings.SplitSeq(strings.TrimRight(string(data), "\n"), "\n") {
		if !slices.ContainsFunc(omit, func(o string) bool { return strings.Contains(line, o) }) {
			lines = append(lines, line)
		}
	}
	lines = lines[max(0, len(lines)-n):]
	return fmt.Sprintf("--- last %d lines of %s ---\n%s", len(lines), path, strings.Join(lines, "\n"))
}
