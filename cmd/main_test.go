package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/source"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

func TestRun_Help_ListsOnlyTheOperatorsFlags(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(run(context.Background(), []string{"--help"}, &out)).To(Equal(0))

	matches := regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(out.String(), -1)
	names := make([]string, 0, len(matches))
	for _, m := range matches {
		names = append(names, m[1])
	}
	sort.Strings(names)
	// Libraries register flags globally (klog's -v, -vmodule, controller-runtime's
	// -kubeconfig on flag.CommandLine); none may show up unless we declare them.
	g.Expect(names).To(Equal([]string{
		"chart-cache-size", "concurrent", "data-path", "default-service-account", "default-source-namespace",
		"feature-gates", "graceful-shutdown-timeout", "health-probe-bind-address", "helm-run-grace-period", "index-cache-size", "kubeconfig", "leader-elect",
		"leader-election-lease-duration", "leader-election-namespace", "leader-election-renew-deadline",
		"leader-election-retry-period", "log-format", "log-level", "max-artifact-file-size", "max-artifact-files",
		"max-artifact-size", "max-chart-decompressed-size", "max-chart-file-size", "max-chart-files", "max-chart-size",
		"max-concurrent-renders", "max-concurrent-rollouts", "max-index-size",
		"max-oci-manifest-size", "max-oci-tag-pages", "max-oci-tags", "max-release-record-size", "max-render-memory", "max-render-output", "max-retry-delay", "metrics-bind-address",
		"metrics-cert-dir", "metrics-secure", "min-reconcile-interval", "min-retry-delay", "multi-tenancy-lockdown", "no-cross-namespace-refs",
		"platform-namespaces", "pprof-bind-address",
		"release-record-key-namespace", "release-record-key-secret", "render-timeout", "requeue-dependency", "source-host-override",
		"watch-configs-label-selector", "watch-label-selector", "watch-namespace", "watches-file",
	}))
}

func TestParseOptions_ChartFetchCaps(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseOptions(nil, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.chartFetch).To(Equal(chart.Options{
		MaxIndexSize: 50 << 20, MaxChartSize: 10 << 20, MaxManifestSize: 2 << 20, MaxTags: 10000, MaxTagPages: 100,
		MaxCacheBytes: 128 << 20, MaxIndexCacheBytes: 64 << 20,
		MaxDecompressedChartSize: 16 << 20, MaxChartFileSize: 5 << 20, MaxChartFiles: 5000,
	}))

	opts, err = parseOptions([]string{"--max-chart-size=512Ki", "--max-index-size=1M", "--chart-cache-size=1Gi",
		"--max-oci-tags=50", "--max-oci-tag-pages=2", "--max-oci-manifest-size=4096", "--index-cache-size=8Mi",
		"--max-chart-decompressed-size=64Mi", "--max-chart-file-size=1Mi", "--max-chart-files=300"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.chartFetch).To(Equal(chart.Options{
		MaxIndexSize: 1000000, MaxChartSize: 512 << 10, MaxManifestSize: 4096, MaxTags: 50, MaxTagPages: 2,
		MaxCacheBytes: 1 << 30, MaxIndexCacheBytes: 8 << 20,
		MaxDecompressedChartSize: 64 << 20, MaxChartFileSize: 1 << 20, MaxChartFiles: 300,
	}))
}

func TestParseOptions_ArtifactLimits(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseOptions(nil, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.artifactLimits).To(Equal(source.Options{MaxUntarBytes: 100 << 20, MaxFileBytes: 16 << 20, MaxFiles: 20000}))

	opts, err = parseOptions([]string{"--max-artifact-size=1Gi", "--max-artifact-file-size=64Mi", "--max-artifact-files=100"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.artifactLimits).To(Equal(source.Options{MaxUntarBytes: 1 << 30, MaxFileBytes: 64 << 20, MaxFiles: 100}))
}

func TestParseOptions_RecordSize(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseOptions(nil, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.maxRecordSize).To(Equal(int64(16 << 20)))
	opts, err = parseOptions([]string{"--max-release-record-size=2Mi"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.maxRecordSize).To(Equal(int64(2 << 20)))
	_, err = parseOptions([]string{"--max-release-record-size=0"}, io.Discard)
	g.Expect(err).To(HaveOccurred())
}

// TestParseOptions_RecordKeySecret: the record key lives in the namespace
// the flag names, else the leader election one, else the pod's, else (a run
// outside a cluster, as `make run` and the benchmarks do) default.
func TestParseOptions_FeatureGates(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseOptions(nil, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.helmDefaults.UseHelm3).To(BeFalse(), "Flux v1.6's defaults unless asked")

	opts, err = parseOptions([]string{"--feature-gates=UseHelm3Defaults=true"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.helmDefaults.UseHelm3).To(BeTrue())

	opts, err = parseOptions([]string{"--feature-gates=UseHelm3Defaults=true", "--feature-gates=UseHelm3Defaults=false"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.helmDefaults.UseHelm3).To(BeFalse(), "the last one wins, as with any flag")

	g.Expect(opts.helmDefaults.KeepWaitOnNewRevision).To(BeFalse(), "a newer revision cancels a wait unless asked")
	opts, err = parseOptions([]string{"--feature-gates=CancelHealthCheckOnNewRevision=false"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.helmDefaults.KeepWaitOnNewRevision).To(BeTrue())

	_, err = parseOptions([]string{"--feature-gates=UseHelm3Default=true"}, io.Discard)
	g.Expect(err).To(MatchError(ContainSubstring(`unknown feature gate "UseHelm3Default"; known gates: CancelHealthCheckOnNewRevision, UseHelm3Defaults`)))
	_, err = parseOptions([]string{"--feature-gates=UseHelm3Defaults"}, io.Discard)
	g.Expect(err).To(MatchError(ContainSubstring("feature gate UseHelm3Defaults wants =true or =false")))
}

func TestParseOptions_RecordKeySecret(t *testing.T) {
	t.Setenv("RUNTIME_NAMESPACE", "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "default/kraan-release-record-key"},
		{[]string{"--leader-election-namespace=ops"}, "ops/kraan-release-record-key"},
		{[]string{"--leader-election-namespace=ops", "--release-record-key-namespace=keys", "--release-record-key-secret=k"}, "keys/k"},
	} {
		g := NewWithT(t)
		opts, err := parseOptions(tt.args, io.Discard)
		g.Expect(err).NotTo(HaveOccurred())
		if _, err := os.Stat(inClusterNamespaceFile); err == nil && tt.args == nil {
			continue // in a pod the pod's namespace comes before default
		}
		g.Expect(opts.recordKeySecret().String()).To(Equal(tt.want), "%v", tt.args)
	}
}

func TestRun_BadFlags_ExitWithUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"--log-format=xml"}, {"--log-level=trace"}, {"--concurrent=0"}, {"--v=4"},
		{"--leader-election-lease-duration=10s"}, // not above the default renew deadline
		{"--leader-election-renew-deadline=2s"},  // not above 1.2 × the default retry period
		{"--leader-election-retry-period=0s"},
		{"--min-retry-delay=0s"},
		{"--min-retry-delay=2m", "--max-retry-delay=1m"},
		{"--requeue-dependency=0s"},
		{"--watch-label-selector=sharding.fluxcd.io/key in (a"},
		{"--max-chart-size=0"}, {"--max-chart-size=ten"}, {"--max-oci-manifest-size=-1Mi"},
		{"--max-oci-tags=0"}, {"--max-oci-tag-pages=0"},
		{"--max-chart-decompressed-size=0"}, {"--max-chart-file-size=-1"}, {"--max-chart-files=0"},
		{"--max-artifact-size=0"}, {"--max-artifact-file-size=big"}, {"--max-artifact-files=-5"},
		{"--metrics-cert-dir=/nonexistent"}, // would silently serve a self-signed certificate
		{"--metrics-cert-dir=.", "--metrics-secure=false"},
		{"--helm-run-grace-period=-1s"},
		{"--helm-run-grace-period=30s"}, // not below the default --graceful-shutdown-timeout: the manager would not wait
		{"--helm-run-grace-period=40s", "--graceful-shutdown-timeout=35s"},
	} {
		var out bytes.Buffer
		g := NewWithT(t)
		g.Expect(run(context.Background(), args, &out)).To(Equal(2), "args %v", args)
		g.Expect(out.String()).NotTo(BeEmpty())
	}
}

// TestRun_ServesProbesMetricsAndLeaseThenShutsDown runs the operator against a
// real API server: it becomes ready, holds the leader Lease, serves metrics,
// and on cancellation returns 0 and releases the Lease for the next leader.
func TestRun_ServesProbesMetricsAndLeaseThenShutsDown(t *testing.T) {
	g := NewWithT(t)
	env, kubeconfig := startEnv(t)

	probeAddr, metricsAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{
			"--kubeconfig", kubeconfig, "--health-probe-bind-address", probeAddr,
			"--metrics-bind-address", metricsAddr, "--metrics-secure=false",
			"--leader-elect", "--leader-election-namespace", "default", "--log-level", "error",
		}, os.Stderr)
	}()

	g.Eventually(httpStatus(probeAddr, "/readyz")).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
	g.Expect(httpStatus(probeAddr, "/healthz")()).To(Equal(http.StatusOK))
	g.Eventually(httpStatus(metricsAddr, "/metrics")).WithTimeout(10 * time.Second).Should(Equal(http.StatusOK))

	lease := &coordinationv1.Lease{}
	leaseKey := client.ObjectKey{Namespace: "default", Name: leaderElectionID}
	g.Eventually(func() string {
		if err := env.Client.Get(context.Background(), leaseKey, lease); err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())

	cancel()
	g.Eventually(exit).WithTimeout(40 * time.Second).Should(Receive(Equal(0)))
	g.Expect(env.Client.Get(context.Background(), leaseKey, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "").To(BeTrue(),
		"the Lease is still held after shutdown; the next leader would wait for it to expire")
}

// TestRestConfig_KubeconfigIsNotRateLimited: the operator run with
// --kubeconfig talks to the API server as fast as the in-cluster one does,
// so tests and `make run` see the operator as it is deployed.
func TestRestConfig_KubeconfigIsNotRateLimited(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600)).To(Succeed())
	cfg, err := restConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.QPS).To(BeNumerically("<", 0), "client-go's default rate limit applies")
	g.Expect(cfg.Host).To(Equal("https://127.0.0.1:6443"))
	g.Expect(cfg.DisableCompression).To(BeTrue(), "the operator's own cluster is not asked for gzip")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func httpStatus(addr, path string) func() int {
	return func() int {
		resp, err := http.Get(fmt.Sprintf("http://%s%s", addr, path)) //nolint:noctx // a probe in a test
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
}

// --watch-configs-label-selector defaults to Flux's label; empty selects
// every ConfigMap and Secret; a selector that does not parse is refused.
func TestParseOptions_WatchConfigsLabelSelector(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseOptions(nil, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	sel, err := opts.watchConfigsSelector()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel.Matches(labels.Set{"reconcile.fluxcd.io/watch": "Enabled"})).To(BeTrue())
	g.Expect(sel.Matches(labels.Set{"app": "x"})).To(BeFalse())

	opts, err = parseOptions([]string{"--watch-configs-label-selector="}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	sel, err = opts.watchConfigsSelector()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel.Matches(labels.Set{"app": "x"})).To(BeTrue())

	opts, err = parseOptions([]string{"--watch-configs-label-selector=a in (b"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = opts.watchConfigsSelector()
	g.Expect(err).To(MatchError(ContainSubstring("--watch-configs-label-selector")))
}

// TestParseOptions_LockedDownByDefault: issue #42. Started with no flag (as
// the CSV, the Helm chart and config/default start it), a tenant's
// HelmRelease acts as an account of its namespace; the operator's own
// namespace and the ones listed act as the operator.
func TestParseOptions_LockedDownByDefault(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("RUNTIME_NAMESPACE", "kraan-system")
	opts, err := parseOptions(nil, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.lockdown).To(BeTrue())
	g.Expect(opts.platformNamespaceList()).To(Equal([]string{"kraan-system"}))

	opts, err = parseOptions([]string{"--multi-tenancy-lockdown=false", "--platform-namespaces=monitoring, ingress ,"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.lockdown).To(BeFalse())
	g.Expect(opts.platformNamespaceList()).To(Equal([]string{"monitoring", "ingress", "kraan-system"}))
}

// startEnv starts a test API server, stopped when the test ends, and writes
// its admin kubeconfig for the operator.
func startEnv(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())
	return env, kubeconfig
}
