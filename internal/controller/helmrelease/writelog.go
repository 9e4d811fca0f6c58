package helmrelease

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// writeLog is what this process last wrote about each release that its
// cache may not show yet: the status, and the failure counters recorded for
// an attempt. A reconcile that follows its own write within milliseconds
// reads a cached copy older than the write; acting on it would repeat a
// Helm action or forget a failure.
type writeLog struct {
	mu sync.Mutex
	// status is the digest of the status of each release as last written.
	status   map[types.NamespacedName]string
	failures map[types.NamespacedName]recordedFailures
}

// recordedFailures are the failure counters this process last recorded for
// an attempt.
type recordedFailures struct {
	attempt  string
	failures helm.Failures
}

func newWriteLog() *writeLog {
	return &writeLog{status: map[types.NamespacedName]string{}, failures: map[types.NamespacedName]recordedFailures{}}
}

// wrote records the status hr was written with.
func (w *writeLog) wrote(hr *kraanv1.HelmRelease) {
	digest := statusDigest(hr)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status[ctrlKey(hr)] = digest
}

// stale says whether a cached copy of hr may predate this process's last
// write of its status: its status is not the one written. (A change of its
// spec or metadata since is no reason to read it again.)
func (w *writeLog) stale(hr *kraanv1.HelmRelease) bool {
	digest := statusDigest(hr)
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.status[ctrlKey(hr)]
	return ok && written != digest
}

func statusDigest(hr *kraanv1.HelmRelease) string {
	data, _ := json.Marshal(&hr.Status)
	sum := sha256.Sum256(data)
	return string(sum[:])
}

// recordFailures remembers the counters recorded for attempt.
func (w *writeLog) recordFailures(key types.NamespacedName, attempt string, f helm.Failures) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures[key] = recordedFailures{attempt: attempt, failures: f}
}

// failuresOf are the counters recorded for attempt by this process, if any.
func (w *writeLog) failuresOf(key types.NamespacedName, attempt string) (helm.Failures, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.failures[key]
	return f.failures, ok && f.attempt == attempt
}

// forget drops what is kept about a deleted release.
func (w *writeLog) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.status, key)
	delete(w.failures, key)
}
