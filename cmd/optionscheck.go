package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// check rejects values the operator could not run with, naming the flags.
func (o *options) check() error {
	if o.minRetryDelay <= 0 || o.maxRetryDelay < o.minRetryDelay {
		return fmt.Errorf("--min-retry-delay must be above 0 and at most --max-retry-delay, got %s and %s",
			o.minRetryDelay, o.maxRetryDelay)
	}
	if o.minReconcileInterval < 0 {
		return fmt.Errorf("--min-reconcile-interval must be at least 0, got %s", o.minReconcileInterval)
	}
	if o.requeueDependency <= 0 {
		return fmt.Errorf("--requeue-dependency must be above 0, got %s", o.requeueDependency)
	}
	if _, err := o.labelSelector(); err != nil {
		return err
	}
	if err := o.checkLimits(); err != nil {
		return err
	}
	if o.concurrent < 1 {
		return fmt.Errorf("--concurrent must be at least 1, got %d", o.concurrent)
	}
	if o.maxConcurrentRollouts < 1 {
		return fmt.Errorf("--max-concurrent-rollouts must be at least 1, got %d", o.maxConcurrentRollouts)
	}
	if o.helmRunGracePeriod < 0 || o.helmRunGracePeriod >= o.gracefulShutdown {
		return fmt.Errorf("--helm-run-grace-period must be at least 0 and below --graceful-shutdown-timeout (%s), got %s",
			o.gracefulShutdown, o.helmRunGracePeriod)
	}
	if err := o.checkLeaderElection(); err != nil {
		return err
	}
	if err := o.checkMetricsCert(); err != nil {
		return err
	}
	_, err := o.zapOptions()
	return err
}

// checkLeaderElection rejects timings client-go's leader election would
// refuse at start, with the flags' names.
func (o *options) checkLeaderElection() error {
	switch {
	case o.retryPeriod <= 0:
		return fmt.Errorf("--leader-election-retry-period must be positive, got %v", o.retryPeriod)
	case o.renewDeadline <= o.retryPeriod*6/5: // client-go's JitterFactor 1.2
		return fmt.Errorf("--leader-election-renew-deadline (%v) must be more than 1.2 × --leader-election-retry-period (%v)",
			o.renewDeadline, o.retryPeriod)
	case o.leaseDuration <= o.renewDeadline:
		return fmt.Errorf("--leader-election-lease-duration (%v) must be more than --leader-election-renew-deadline (%v)",
			o.leaseDuration, o.renewDeadline)
	}
	return nil
}

// checkMetricsCert fails when --metrics-cert-dir lacks the certificate or
// its key: controller-runtime would fall back to a self-signed certificate
// without a word, and every scrape that verifies TLS would fail.
func (o *options) checkMetricsCert() error {
	if o.metricsCertDir == "" {
		return nil
	}
	if !o.metricsSecure {
		return errors.New("--metrics-cert-dir needs --metrics-secure: metrics served over HTTP use no certificate")
	}
	for _, name := range []string{metricsCertName, metricsKeyName} {
		if _, err := os.Stat(filepath.Join(o.metricsCertDir, name)); err != nil {
			return fmt.Errorf("--metrics-cert-dir %s: %w", o.metricsCertDir, err)
		}
	}
	return nil
}

// The file names in --metrics-cert-dir: those of a kubernetes.io/tls Secret
// (and of cert-manager's), mounted as a volume.
const (
	metricsCertName = "tls.crt"
	metricsKeyName  = "tls.key"
)

// zapOptions turns --log-format and --log-level into controller-runtime's zap options.
func (o *options) zapOptions() (*zap.Options, error) {
	// Milliseconds, as Flux logs them: a reconcile's steps take tens of them.
	zopts := &zap.Options{TimeEncoder: zapcore.TimeEncoderOfLayout("2006-01-02T15:04:05.000Z07:00")}
	switch o.logFormat {
	case "json":
		zopts.Development = false
	case "console":
		zopts.Development = true
	default:
		return nil, fmt.Errorf("--log-format must be json or console, got %q", o.logFormat)
	}
	level, err := zapcore.ParseLevel(o.logLevel)
	if err != nil || (level != zapcore.DebugLevel && level != zapcore.InfoLevel && level != zapcore.ErrorLevel) {
		return nil, fmt.Errorf("--log-level must be debug, info or error, got %q", o.logLevel)
	}
	zopts.Level = level
	// Stack traces only for real errors; Development would add them to warnings.
	zopts.StacktraceLevel = zapcore.PanicLevel
	return zopts, nil
}

// platformNamespaceList is --platform-namespaces and the operator's own
// namespace ($RUNTIME_NAMESPACE, else --leader-election-namespace, else the
// pod's; none outside a cluster).
func (o *options) platformNamespaceList() []string {
	namespaces := splitList(o.platformNamespaces)
	if own := o.ownNamespace(); own != "" {
		namespaces = append(namespaces, own)
	}
	return namespaces
}

// splitList is a comma-separated flag's values, blanks dropped.
func splitList(list string) []string {
	var out []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// inClusterNamespaceFile holds the pod's namespace, as for every pod.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// recordKeySecret is the Secret holding the release record key: in
// --release-record-key-namespace, else the leader election namespace, else
// the pod's own namespace, else (a run outside the cluster: `make run`, the
// benchmarks) "default".
func (o *options) recordKeySecret() types.NamespacedName {
	ns := o.recordKeyNamespace
	if ns == "" {
		ns = o.leaderElectionNamespace
	}
	if ns == "" {
		if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
			ns = strings.TrimSpace(string(data))
		}
	}
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return types.NamespacedName{Namespace: ns, Name: o.recordKeySecretName}
}
