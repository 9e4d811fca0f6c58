package localplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// helperRole makes the test binary act as a helper process when set.
const helperRole = "LOCALPLANE_TEST_HELPER"

// TestChildDiesWithParent starts a helper process that starts a child the
// way Start does, SIGKILLs the helper (so no Stop or defer runs), and expects
// the child to die too: the parent-death signal must not depend on cleanup code.
func TestChildDiesWithParent(t *testing.T) {
	switch os.Getenv(helperRole) {
	case "parent":
		runHelperParent()
		return
	case "child":
		idle()
	}
	g := NewWithT(t)
	parent := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^TestChildDiesWithParent$")
	parent.Env = append(os.Environ(), helperRole+"=parent")
	out, err := parent.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parent.Start()).To(Succeed())
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })

	line, err := bufio.NewReader(out).ReadString('\n')
	g.Expect(err).NotTo(HaveOccurred())
	childPID, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "child "))
	g.Expect(err).NotTo(HaveOccurred(), "helper said %q", line)
	g.Expect(processGone(childPID)).To(BeFalse(), "child should run while its parent does")
	t.Cleanup(func() { _ = syscall.Kill(childPID, syscall.SIGKILL) }) // only matters on failure

	g.Expect(parent.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = parent.Wait()
	g.Eventually(func() bool { return processGone(childPID) }).
		WithTimeout(10*time.Second).WithPolling(20*time.Millisecond).
		Should(BeTrue(), "child %d outlived its SIGKILLed parent", childPID)
}

// runHelperParent starts a child through a spawner, then ends OS threads the
// way Go does when a goroutine exits while locked (the pitfall the spawner
// guards against), reports the child's pid and idles.
func runHelperParent() {
	s := newSpawner()
	c, err := startChild(s, os.TempDir(), fmt.Sprintf("localplane-helper-%d", os.Getpid()), nil,
		[]string{helperRole + "=child"}, os.Args[0], "-test.run=^TestChildDiesWithParent$")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Remove(c.logPath)
	endLockedThreads(64)
	if processGone(c.pid()) {
		fmt.Println("child died when unrelated threads ended")
		os.Exit(1)
	}
	fmt.Printf("child %d\n", c.pid())
	idle()
}

// endLockedThreads makes n goroutines lock to OS threads at the same time,
// then lets them exit locked so the runtime ends those threads. Had the
// forking thread not been reserved it could be among them; the runtime
// chooses the threads, so this is a stress, not a proof (the design argument
// is in doc.go).
func endLockedThreads(n int) {
	var started, exited sync.WaitGroup
	release := make(chan struct{})
	for range n {
		started.Add(1)
		exited.Go(func() {
			runtime.LockOSThread()
			started.Done()
			<-release
		})
	}
	started.Wait()
	close(release)
	exited.Wait()
}

// idle blocks until the process is killed (the test kills it).
func idle() {
	for {
		time.Sleep(time.Hour)
	}
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie (an orphan whose new parent has not reaped it yet, which
// depends on the init process of the machine).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// TestStartProcess_StopAndKill starts idle helpers with StartProcess: Stop
// ends one with SIGTERM within its grace period, Kill another with SIGKILL,
// and the log tail leaves out what it is told to.
func TestStartProcess_StopAndKill(t *testing.T) {
	if os.Getenv(helperRole) == "child" {
		fmt.Println("noise")
		fmt.Println("idling")
		idle()
	}
	g := NewWithT(t)
	start := func(name string) *Process {
		p, err := StartProcess(ProcessOptions{
			Name: name, Dir: t.TempDir(), Binary: os.Args[0],
			Args: []string{"-test.run=^TestStartProcess_StopAndKill$"},
			Env:  []string{helperRole + "=child"},
		})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = p.Stop(time.Second) })
		return p
	}

	stopped := start("stopped")
	g.Eventually(func() string { return stopped.LogTail(5, "noise") }).WithTimeout(10 * time.Second).
		Should(And(ContainSubstring("idling"), Not(ContainSubstring("noise"))))
	g.Expect(stopped.State()).To(BeNil())
	g.Expect(stopped.Stop(10 * time.Second)).To(Succeed())
	g.Expect(stopped.Exited()).To(BeClosed())
	g.Expect(stopped.State().Sys().(syscall.WaitStatus).Signal()).To(Equal(syscall.SIGTERM))

	killed := start("killed")
	g.Expect(killed.Kill()).To(Succeed())
	g.Expect(killed.State().Sys().(syscall.WaitStatus).Signal()).To(Equal(syscall.SIGKILL))
	g.Expect(processGone(killed.PID())).To(BeTrue())
}
