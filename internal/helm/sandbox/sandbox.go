package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kraan-io/kraan-operator/internal/fair"
)

// Defaults of Limits. A render of a large real chart (hundreds of objects)
// takes well under a second and tens of MiB; the worker itself starts with
// a few MiB of heap.
const (
	DefaultMemory  int64 = 256 << 20
	DefaultOutput  int64 = 16 << 20
	DefaultTimeout       = 30 * time.Second
	// DefaultConcurrent renders run at once; more wait. With the default
	// memory bound, two workers fit beside the operator in its shipped
	// memory limit.
	DefaultConcurrent = 2
)

// Flags of the operator that set Limits; a LimitError names the one to
// raise.
const (
	FlagMemory  = "--max-render-memory"
	FlagOutput  = "--max-render-output"
	FlagTimeout = "--render-timeout"
	// FlagConcurrent sets Limits.Concurrent.
	FlagConcurrent = "--max-concurrent-renders"
)

// Limits bound one render. Zero fields take the defaults.
type Limits struct {
	// Memory is the most data the worker may map (RLIMIT_DATA).
	Memory int64
	// Output is the most rendered text, all files summed.
	Output int64
	// Timeout bounds the render, the worker's start included.
	Timeout time.Duration
	// Concurrent is how many workers run at once.
	Concurrent int
}

func (l Limits) withDefaults() Limits {
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Concurrent <= 0 {
		l.Concurrent = DefaultConcurrent
	}
	return l
}

// LimitError says a render went over one of its bounds. The release fails
// with it; nothing was applied.
type LimitError struct {
	// What is the bound: "memory", "output" or "time".
	What string
	// Limit is the bound's value, as the flag takes it.
	Limit string
	// Flag raises it.
	Flag string
	// Detail adds what was measured, when known.
	Detail string
}

func (e *LimitError) Error() string {
	msg := fmt.Sprintf("rendering the chart's templates went over the %s bound of %s (%s)", e.What, e.Limit, e.Flag)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + "; the templates ran in a bounded worker and were stopped, nothing was applied"
}

// Lookup answers a template's lookup, as the release's identity; an empty
// map for an object that does not exist.
type Lookup func(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error)

// Input is one render.
type Input struct {
	Chart        *chart.Chart
	Values       map[string]any
	Release      common.ReleaseOptions
	Capabilities *common.Capabilities
	// Lookup answers lookups; nil answers every lookup with nothing, as
	// Helm does without a cluster.
	Lookup Lookup
	// Tenant is the namespace the render is for: workers are shared fairly
	// between tenants (fair.Slots), so one tenant's slow renders delay its
	// own, not every other's.
	Tenant string
}

// Renderer runs renders in workers.
type Renderer struct {
	limits Limits
	// executable is the worker binary: the running one.
	executable string
	slots      *fair.Slots
}

// New returns a renderer whose workers are the running binary.
func New(limits Limits) (*Renderer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the render worker: %w", err)
	}
	limits = limits.withDefaults()
	return &Renderer{limits: limits, executable: exe, slots: fair.NewSlots(limits.Concurrent)}, nil
}

// Render renders in's chart in a worker and returns the rendered files, as
// Helm's engine names them.
func (r *Renderer) Render(ctx context.Context, in Input) (map[string]string, error) {
	if err := r.slots.Acquire(ctx, in.Tenant); err != nil {
		return nil, err
	}
	defer r.slots.Release(in.Tenant)
	wire, err := toWire(in.Chart)
	if err != nil {
		return nil, fmt.Errorf("encoding the chart: %w", err)
	}
	values, err := encodeMapValue(in.Values)
	if err != nil {
		return nil, fmt.Errorf("encoding the values: %w", err)
	}
	payload, err := json.Marshal(request{Chart: wire, Values: values, Release: in.Release,
		Capabilities: in.Capabilities, MaxOutput: r.limits.Output})
	if err != nil {
		return nil, fmt.Errorf("encoding the render request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	w, err := r.start(ctx)
	if err != nil {
		return nil, err
	}
	defer w.close()
	go w.serveLookups(ctx, in.Lookup, r.limits.Output)
	go func() {
		_, _ = w.stdin.Write(payload)
		_ = w.stdin.Close()
	}()
	// At most the output bound and the JSON around it.
	maxAnswer := 2*r.limits.Output + 1<<20
	out, readErr := io.ReadAll(io.LimitReader(w.stdout, maxAnswer))
	if int64(len(out)) >= maxAnswer {
		// It would block writing the rest: it is over the bound anyway.
		_ = w.cmd.Process.Kill()
	}
	waitErr := w.cmd.Wait()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, &LimitError{What: "time", Limit: r.limits.Timeout.String(), Flag: FlagTimeout}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case outOfMemory(w.stderr.String()):
		return nil, &LimitError{What: "memory", Limit: quantity(r.limits.Memory), Flag: FlagMemory}
	case readErr != nil:
		return nil, fmt.Errorf("reading the render worker's answer: %w", readErr)
	}
	resp := response{}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("the render worker ended without an answer (%w): %s", waitErr, firstLine(w.stderr.String()))
	}
	switch {
	case resp.TooLarge > 0:
		return nil, &LimitError{What: "output", Limit: quantity(r.limits.Output), Flag: FlagOutput,
			Detail: fmt.Sprintf("the templates rendered %s", quantity(resp.TooLarge))}
	case resp.Err != "":
		return nil, errors.New(resp.Err)
	}
	return resp.Files, nil
}

// worker is one running worker process and its pipes.
type worker struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	stderr  *tailBuffer
	lookups *os.File // requests, read here
	answers *os.File // answers, written here
	closers []io.Closer
}

// start starts a worker bounded by r's limits. Its data limit is set before
// it reads its input, so the templates run under it.
func (r *Renderer) start(ctx context.Context) (*worker, error) {
	lookupsR, lookupsW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	answersR, answersW, err := os.Pipe()
	if err != nil {
		_ = lookupsR.Close()
		_ = lookupsW.Close()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, r.executable)
	cmd.Env = []string{workerEnv + "=1", "GOMAXPROCS=1", fmt.Sprintf("GOMEMLIMIT=%d", r.limits.Memory*3/4), "GOTRACEBACK=none"}
	cmd.ExtraFiles = []*os.File{lookupsW, answersR}
	w := &worker{cmd: cmd, stderr: &tailBuffer{max: 4096}, lookups: lookupsR, answers: answersW}
	cmd.Stderr = w.stderr
	if w.stdin, err = cmd.StdinPipe(); err == nil {
		w.stdout, err = cmd.StdoutPipe()
	}
	if err == nil {
		err = cmd.Start()
	}
	// The child holds its ends now.
	_ = lookupsW.Close()
	_ = answersR.Close()
	if err != nil {
		_ = lookupsR.Close()
		_ = answersW.Close()
		return nil, fmt.Errorf("starting the render worker: %w", err)
	}
	limit := uint64(r.limits.Memory)
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = lookupsR.Close()
		_ = answersW.Close()
		return nil, fmt.Errorf("bounding the render worker's memory: %w", err)
	}
	w.closers = []io.Closer{lookupsR, answersW}
	return w, nil
}

func (w *worker) close() {
	for _, c := range w.closers {
		_ = c.Close()
	}
}

// serveLookups answers the worker's lookups until it closes its end. An
// answer over max bytes is refused, as a render over its output bound is.
func (w *worker) serveLookups(ctx context.Context, lookup Lookup, max int64) {
	requests := bufio.NewReaderSize(w.lookups, 64<<10)
	for {
		line, err := readLine(requests, 64<<10)
		if err != nil {
			return
		}
		req := lookupRequest{}
		resp := lookupResponse{}
		switch err := json.Unmarshal(line, &req); {
		case err != nil:
			resp.Err = "lookup: " + err.Error()
		case lookup == nil:
		default:
			obj, err := lookup(ctx, req.APIVersion, req.Kind, req.Namespace, req.Name)
			if err == nil {
				resp.Object, err = encodeMapValue(obj)
			}
			if err != nil {
				resp.Err = err.Error()
			}
		}
		answer, err := encodeLine(resp)
		if err == nil && int64(len(answer)) > max {
			answer, err = encodeLine(lookupResponse{Err: fmt.Sprintf("lookup of %s %s/%s answered %s, over the output bound of %s (%s)",
				req.Kind, req.Namespace, req.Name, quantity(int64(len(answer))), quantity(max), FlagOutput)})
		}
		if err != nil {
			return
		}
		if _, err := w.answers.Write(answer); err != nil {
			return
		}
	}
}

// readLine reads one line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("a lookup request over %d bytes", max)
		}
		if !isPrefix {
			return line, nil
		}
	}
}

// outOfMemory says whether the worker's error output is the Go runtime's
// failing to get memory: the data limit was reached, for the heap or for a
// new thread's stack.
func outOfMemory(stderr string) bool {
	for _, sign := range []string{"out of memory", "cannot allocate memory", "pthread_create failed", "newosproc"} {
		if strings.Contains(stderr, sign) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// tailBuffer keeps the first and the last max bytes written to it: the Go
// runtime's fatal error comes first, then goroutine dumps.
type tailBuffer struct {
	mu   sync.Mutex
	head []byte
	buf  bytes.Buffer
	max  int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + "\n" + t.buf.String()
}
