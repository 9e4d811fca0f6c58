package soak_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// Leader election timings of the soak's operators. A SIGKILLed leader does
// not release its Lease, so every kill costs its successor the lease
// duration; the defaults (15s, 10s, 2s) would spend most of the soak
// waiting. A renew deadline this short also means a leader that cannot
// reach the restarted apiserver for 4s loses the Lease and exits, as
// controller-runtime makes it: the supervisor restarts it, as the kubelet
// would, and the soak counts those exits.
var leaderElectionArgs = []string{
	"--leader-elect",
	"--leader-election-namespace=" + leaseNamespace,
	"--leader-election-lease-duration=6s",
	"--leader-election-renew-deadline=4s",
	"--leader-election-retry-period=1s",
}

// kill records one SIGKILL: when, and the Lease holder the killed process
// left behind, so that the next leader can be told apart.
type kill struct {
	at     time.Time
	holder string
	name   string
}

// exit records an operator process that stopped on its own.
type exit struct {
	at    time.Time
	name  string
	state string
}

// operators is the soak's kubelet: it keeps one operator process running
// (never two at once, so two leaders cannot hide a bug), restarts one that
// exits on its own, and SIGKILLs the running one on request.
type operators struct {
	t     *testing.T
	kills chan chan kill // requests to kill: the reply says what was killed

	mu       sync.Mutex
	started  []*suite.RunningOperator // every process that became ready
	attempts int                      // processes started, ready or not: they name the logs
	killed   []kill
	exits    []exit
	err      error // a process that could not be started
	done     chan struct{}
}

// startOperators starts the first operator process and the loop that keeps
// one running until the test ends.
func startOperators(t *testing.T) *operators {
	o := &operators{t: t, kills: make(chan chan kill), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		<-o.done
		if t.Failed() {
			o.logTails()
		}
	})
	go o.run(ctx)
	return o
}

// maxFailedStarts is how many starts in a row may fail before the soak
// gives up: a process that cannot reach the apiserver exits at once, and the
// apiserver may be away for a restart, but not for this long.
const maxFailedStarts = 8

// run starts a process, waits until it exits or a kill is requested, and
// starts the next, until ctx ends; then it stops the running one. A process
// that exits before it is ready (it cannot reach the apiserver) is started
// again after a back-off, as the kubelet does.
func (o *operators) run(ctx context.Context) {
	defer close(o.done)
	failed := 0
	for ctx.Err() == nil {
		op, err := o.start(ctx)
		if err != nil {
			if failed++; failed >= maxFailedStarts || ctx.Err() != nil {
				o.mu.Lock()
				o.err = err
				o.mu.Unlock()
				return
			}
			// The first line names the process and its exit; the rest is its log's tail.
			first, _, _ := strings.Cut(err.Error(), "\n")
			o.recordExit(exit{at: time.Now(), name: "before ready", state: first})
			backOff(ctx, failed)
			continue
		}
		failed = 0
		select {
		case <-op.Exited():
			o.recordExit(exit{at: time.Now(), name: op.Name(), state: op.State().String()})
		case reply := <-o.kills:
			reply <- o.kill(op)
		case <-ctx.Done():
			if err := op.Stop(); err != nil {
				o.t.Errorf("stopping the operator %s: %v", op.Name(), err)
			}
		}
	}
}

// backOff waits before the next start after failed ones: 1s, 2s, 4s, 8s at
// most (the kubelet's back-off, shortened).
func backOff(ctx context.Context, failed int) {
	select {
	case <-time.After(min(time.Second<<(failed-1), 8*time.Second)):
	case <-ctx.Done():
	}
}

// start starts the next operator process and waits until its informers
// have synced; leader election may still hold it back.
func (o *operators) start(ctx context.Context) (*suite.RunningOperator, error) {
	o.mu.Lock()
	o.attempts++
	name := fmt.Sprintf("operator-%02d", o.attempts)
	o.mu.Unlock()
	dir := filepath.Join(workDir, "operators", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	op, err := suite.StartOperator(ctx, suite.OperatorProcess{
		Name: name, Binary: operatorBinary, Kubeconfig: kubeconfig, Dir: dir,
		Args: append(append([]string{}, leaderElectionArgs...),
			"--log-level=debug"), // Helm's own log: what it was doing when killed
	})
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.started = append(o.started, op)
	o.mu.Unlock()
	return op, nil
}

// kill SIGKILLs op after reading who holds the Lease.
func (o *operators) kill(op *suite.RunningOperator) kill {
	holder, _ := suite.LeaseHolder(context.Background(), k8s, leaseNamespace) // none yet: the first leader is still to come
	k := kill{at: time.Now(), holder: holder, name: op.Name()}
	if err := op.Kill(); err != nil {
		o.t.Errorf("killing %s: %v", op.Name(), err)
	}
	o.mu.Lock()
	o.killed = append(o.killed, k)
	o.mu.Unlock()
	return k
}

func (o *operators) recordExit(e exit) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.exits = append(o.exits, e)
}

// Kill SIGKILLs the running operator once it is running, and returns what
// was killed; the loop starts the next process.
func (o *operators) Kill() (kill, error) {
	reply := make(chan kill, 1)
	select {
	case o.kills <- reply:
		return <-reply, nil
	case <-o.done:
		return kill{}, fmt.Errorf("no operator to kill: %w", o.startErr())
	}
}

// waitLeader waits until a process other than the one killed holds the
// Lease: the killed one's Lease has expired and its successor leads.
func (o *operators) waitLeader(g Gomega, k kill) time.Duration {
	g.Eventually(func(g Gomega) {
		g.Expect(o.startErr()).NotTo(HaveOccurred())
		holder, err := suite.LeaseHolder(context.Background(), k8s, leaseNamespace)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(holder).NotTo(Equal(k.holder))
	}).WithTimeout(suite.OperatorStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return time.Since(k.at)
}

func (o *operators) startErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Exits returns the processes that stopped on their own.
func (o *operators) Exits() []exit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]exit(nil), o.exits...)
}

// Kills returns the kills so far.
func (o *operators) Kills() []kill {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]kill(nil), o.killed...)
}

// panicLine matches what a panic leaves in a log: the runtime's "panic:"
// and goroutine dump of a crash, and controller-runtime's "Observed a panic"
// when it recovers one in a reconciler.
var panicLine = regexp.MustCompile(`panic:|Observed a panic|goroutine \d+ \[running\]`)

// Panics returns every line of every operator log that shows a panic,
// prefixed with the log's name: the processes that never became ready
// included.
func (o *operators) Panics() ([]string, error) {
	logs, err := filepath.Glob(filepath.Join(workDir, "operators", "*", "*.log"))
	if err != nil {
		return nil, err
	}
	var found []string
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if panicLine.MatchString(line) {
				found = append(found, filepath.Base(path)+": "+line)
			}
		}
	}
	return found, nil
}

// Started is how many operator processes were started, and how many of
// them became ready.
func (o *operators) Started() (attempts, ready int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.attempts, len(o.started)
}

// logTails prints the end of the last two processes' logs, for a failed
// soak; the others are in workDir, which a failed run keeps.
func (o *operators) logTails() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, op := range o.started[max(0, len(o.started)-2):] {
		o.t.Log(op.LogTail(60))
	}
}
