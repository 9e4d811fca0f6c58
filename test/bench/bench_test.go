// Package bench measures the HelmRelease controller against plain Helm SDK
// calls on the local control plane, side by side in one run (`make bench`).
// Results are ratios and counts, never assertions on time.
package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/operator"
	"github.com/kraan-io/kraan-operator/internal/testenv"
	"github.com/kraan-io/kraan-operator/internal/testutil/chartrepo"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// releases is how many releases each side installs; KRAAN_BENCH_RELEASES
// overrides it (e.g. 1000 for the memory figure).
func releases() int {
	if n, err := strconv.Atoi(os.Getenv("KRAAN_BENCH_RELEASES")); err == nil && n > 0 {
		return n
	}
	return 100
}

// countingTransport counts the API requests the operator makes, in all and
// by verb and resource.
type countingTransport struct {
	next   http.RoundTripper
	count  *atomic.Int64
	byKind *requestCounts
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.count.Add(1)
	c.byKind.add(requestKind(r))
	return c.next.RoundTrip(r)
}

// requestCounts counts requests by kind ("GET secrets", "WATCH apps/deployments").
type requestCounts struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (r *requestCounts) add(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int64{}
	}
	r.counts[kind]++
}

// table lists the kinds by count, as requests per release.
func (r *requestCounts) table(releases int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make([]string, 0, len(r.counts))
	for k := range r.counts {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return r.counts[kinds[i]] > r.counts[kinds[j]] })
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %6.2f  %s\n", float64(r.counts[k])/float64(releases), k)
	}
	return b.String()
}

// requestKind names a request by verb and resource: the path's last
// resource segment (/api/v1/namespaces/x/secrets/y → secrets), its API group,
// and the subresource if any; a list with ?watch=true is a WATCH.
func requestKind(r *http.Request) string {
	verb := r.Method
	if r.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	group := ""
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1]+"/", parts[3:]
	default:
		return verb + " " + r.URL.Path // discovery, /version
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return verb + " " + group + "(discovery)"
	}
	kind := group + parts[0]
	if len(parts) >= 3 {
		kind += "/" + parts[2]
	} else if len(parts) == 1 && verb == http.MethodGet {
		verb = "LIST"
	}
	return verb + " " + kind
}

func BenchmarkHelmReleases_OperatorVersusSequentialSDK(b *testing.B) {
	ctrl.SetLogger(logr.Discard()) // the operator's log is not what is measured
	n := releases()
	for range b.N {
		plane, cfg := startPlane(b)
		repo := chartrepo.NewHTTPRepo(b, chartrepo.ChartDir("small"))
		sdk := installSequentially(b, plane.Kubeconfig(), repo, n)
		requests := &atomic.Int64{}
		byKind := &requestCounts{}
		rssBefore := rssMB(b)
		operator := installWithOperator(b, cfg, repo, n, requests, byKind)
		rssAfter := rssMB(b)
		b.ReportMetric(operator.Seconds(), "operator-s")
		b.ReportMetric(sdk.Seconds(), "sequential-sdk-s")
		b.ReportMetric(sdk.Seconds()/operator.Seconds(), "speedup")
		b.ReportMetric(float64(requests.Load())/float64(n), "api-requests/release")
		b.ReportMetric(rssAfter, "rss-MB")
		b.ReportMetric(rssAfter-rssBefore, "rss-growth-MB")
		fmt.Printf("%d releases: operator %v, sequential Helm SDK %v (%.2fx); %.0f API requests per release; RSS %.0f MB (+%.0f MB)\n",
			n, operator.Round(time.Millisecond), sdk.Round(time.Millisecond), sdk.Seconds()/operator.Seconds(),
			float64(requests.Load())/float64(n), rssAfter, rssAfter-rssBefore)
		fmt.Printf("API requests per release, by verb and resource:\n%s", byKind.table(n))
		_ = plane.Stop()
	}
}

func startPlane(b *testing.B) (*localplane.Plane, *rest.Config) {
	plane, err := localplane.Start(context.Background(), localplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = plane.Stop() })
	cfg := plane.RESTConfig()
	cfg.QPS, cfg.Burst = 50, 300
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	crds := os.Getenv("KRAAN_SOURCE_CRDS")
	if crds == "" {
		b.Fatal("KRAAN_SOURCE_CRDS is not set: run `make bench`")
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases"), crds}, ErrorIfPathMissing: true,
	}); err != nil {
		b.Fatal(err)
	}
	return plane, cfg
}

// installSequentially installs n releases one after another with the Helm
// SDK, waiting for each as the operator does: the baseline.
func installSequentially(b *testing.B, kubeconfig string, repo *chartrepo.HTTPRepo, n int) time.Duration {
	ctx := context.Background()
	res, err := chart.NewFetcher(chart.Options{}).Fetch(ctx, chart.Request{Chart: "small", Repository: &chart.Repository{URL: repo.URL}})
	if err != nil {
		b.Fatal(err)
	}
	ns := "sdk"
	createNamespace(b, kubeconfig, ns)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, ns, "secret", func(string, ...any) {}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = fmt.Sprintf("r%d", i), ns
		install.Wait, install.Timeout = true, 5*time.Minute
		if _, err := install.RunWithContext(ctx, res.Chart, map[string]any{}); err != nil {
			b.Fatalf("sdk install %d: %v", i, err)
		}
	}
	return time.Since(start)
}

func createNamespace(b *testing.B, kubeconfig, ns string) {
	cfg, err := clientConfig(kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
}

func clientConfig(kubeconfig string) (*rest.Config, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	return flags.ToRESTConfig()
}

// installWithOperator runs the operator's manager and creates n HelmReleases
// at once; it returns the time until all are Ready.
func installWithOperator(b *testing.B, cfg *rest.Config, repo *chartrepo.HTTPRepo, n int, requests *atomic.Int64,
	byKind *requestCounts) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, count: requests, byKind: byKind}
	}
	mgr, err := ctrl.NewManager(counted, ctrl.Options{Scheme: testenv.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := operator.SetupAll(mgr, operator.Options{ControllerOptions: kit.ControllerOptions{MaxConcurrentReconciles: 10}, ChartArtifactsDir: b.TempDir()}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ns := "operator"
	mustCreate(b, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	mustCreate(b, c, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Hour}}})
	start := time.Now()
	for i := range n {
		mustCreate(b, c, &kraanv1.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: ns},
			Spec: kraanv1.HelmReleaseSpec{Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart: "small", SourceRef: kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}}},
		})
	}
	waitAllReady(b, c, ns, n)
	return time.Since(start)
}

func mustCreate(b *testing.B, c client.Client, obj client.Object) {
	if err := c.Create(context.Background(), obj); err != nil {
		b.Fatal(err)
	}
}

// waitAllReady polls until n HelmReleases of ns are Ready, with a deadline.
func waitAllReady(b *testing.B, c client.Client, ns string, n int) {
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		list := &kraanv1.HelmReleaseList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, hr := range list.Items {
			if apimeta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.ReadyCondition) {
				ready++
			}
		}
		if ready == n {
			return
		}
		time.Sleep(250 * time.Millisecond) // a poll interval, not synchronisation: the deadline bounds it
	}
	b.Fatalf("not all %d releases Ready within 30 minutes", n)
}

// rssMB is this process's resident set size: the operator runs in it.
func rssMB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, err := strconv.ParseFloat(strings.Fields(line)[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("VmRSS not found")
	return 0
}
