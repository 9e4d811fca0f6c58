package localplane

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// ProcessOptions says what StartProcess runs.
type ProcessOptions struct {
	// Name names the log, <Dir>/<Name>.log, and the process in errors.
	Name string
	// Dir is the working directory and holds the log; it must exist.
	Dir string
	// Binary is the program's path; Args are its arguments.
	Binary string
	Args   []string
	// Env is added to this process's environment.
	Env []string
	// Logs, if not nil, also receives the output, each line prefixed with
	// "[Name] ".
	Logs io.Writer
}

// Process is a program started the way Start starts the plane's components,
// for tests that run a program under test beside the plane: in a process
// group of its own, with a parent-death signal from a locked OS thread (see
// the package documentation), so it dies with the test binary even when that
// is killed, and with its output in a log file.
type Process struct {
	child *child
}

// StartProcess starts o.Binary. The process runs until it exits, Stop or
// Kill ends it, or the test binary dies.
func StartProcess(o ProcessOptions) (*Process, error) {
	// A spawner of its own: its locked thread must outlive this process
	// only, whatever becomes of a plane.
	s := newSpawner()
	c, err := startChild(s, o.Dir, o.Name, o.Logs, o.Env, o.Binary, o.Args...)
	if err != nil {
		s.close()
		return nil, err
	}
	go func() {
		<-c.exited
		s.close()
	}()
	return &Process{child: c}, nil
}

// PID returns the process id.
func (p *Process) PID() int { return p.child.pid() }

// LogPath returns the path of the log file, <Dir>/<Name>.log.
func (p *Process) LogPath() string { return p.child.logPath }

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.child.exited }

// State returns how the process exited; nil until Exited is closed.
func (p *Process) State() *os.ProcessState {
	if !p.child.hasExited() {
		return nil
	}
	return p.child.cmd.ProcessState
}

// Stop terminates the process as the kubelet terminates a container: SIGTERM
// to its process group, SIGKILL when it is still there after grace. It waits
// until the process has been reaped, and returns an error when SIGKILL was
// needed or did not help. Stopping a process that has exited clears what it
// left in its group and returns nil.
func (p *Process) Stop(grace time.Duration) error {
	graceful := p.child.terminate(grace)
	err := p.child.killGroup()
	if !graceful {
		err = errors.Join(fmt.Errorf("%s did not stop within %v of SIGTERM", p.child.name, grace), err)
	}
	return err
}

// Kill sends SIGKILL to the process alone, not its group, as a crash or the
// OOM killer would, and waits until it has been reaped. State then says
// what ended it: a process that had exited already is not signalled.
func (p *Process) Kill() error {
	if p.child.hasExited() {
		return nil
	}
	// ESRCH: it exited and was reaped since the check.
	if err := syscall.Kill(p.child.pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", p.child.name, p.child.pid(), err)
	}
	return p.child.reaped()
}

// LogTail returns the last n lines of the log, leaving out the lines that
// contain any of omit (a probe's noise, say).
func (p *Process) LogTail(n int, omit ...string) string {
	return logTail(p.child.logPath, n, omit...)
}

// FreePort returns a loopback port nothing listens on at the moment; see
// freePorts for the window in which another process could take it.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
