package helmrun

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kraan-io/kraan-operator/internal/helm"
)

// WriteLog is what this process last wrote about each object that its cache
// may not show yet: the digest of the status, and the failure counters
// recorded for an attempt. A reconcile that follows its own write within
// milliseconds reads a cached copy older than the write; acting on it would
// repeat a Helm action or forget a failure.
type WriteLog struct {
	mu       sync.Mutex
	status   map[types.NamespacedName]string
	failures map[types.NamespacedName]recordedFailures
}

// recordedFailures are the failure counters this process last recorded for
// an attempt.
type recordedFailures struct {
	attempt  string
	failures helm.Failures
}

// NewWriteLog returns an empty write log.
func NewWriteLog() *WriteLog {
	return &WriteLog{status: map[types.NamespacedName]string{}, failures: map[types.NamespacedName]recordedFailures{}}
}

// Wrote records the digest of the status key was written with.
func (w *WriteLog) Wrote(key types.NamespacedName, statusDigest string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status[key] = statusDigest
}

// Stale says whether a cached copy of key, whose status has statusDigest,
// may predate this process's last write of its status: its status is not
// the one written. (A change of its spec or metadata since is no reason to
// read it again.)
func (w *WriteLog) Stale(key types.NamespacedName, statusDigest string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.status[key]
	return ok && written != statusDigest
}

// RecordFailures remembers the counters recorded for attempt.
func (w *WriteLog) RecordFailures(key types.NamespacedName, attempt string, f helm.Failures) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures[key] = recordedFailures{attempt: attempt, failures: f}
}

// FailuresOf are the counters recorded for attempt by this process, if any.
func (w *WriteLog) FailuresOf(key types.NamespacedName, attempt string) (helm.Failures, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.failures[key]
	return f.failures, ok && f.attempt == attempt
}

// Forget drops what is kept about a deleted object.
func (w *WriteLog) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.status, key)
	delete(w.failures, key)
}
