package addonslayer

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

const (
	sourceNamespace = "flux-system"
	// platformNamespace is where clusters are registered.
	platformNamespace = "platform"
)

// layerEnv is an API server with our CRDs and Flux's source CRDs, the
// AddonsLayer controller running alone, and an HTTP server standing in for
// source-controller's artifact storage.
type layerEnv struct {
	c client.Client
	// config reaches the API server, for CRDs a single case installs.
	config    *rest.Config
	artifacts *artifactServer
	// dryRuns counts the controller's server-side dry runs (PATCH ?dryRun).
	dryRuns *dryRunCounts
}

// dryRunCounter counts the PATCH requests with dryRun set that go through
// it, by the namespace of their object: other layers of the environment
// resync on their own interval, and a count of all would count theirs.
type dryRunCounter struct {
	next   http.RoundTripper
	counts *dryRunCounts
}

// dryRunCounts are the counts every dryRunCounter of a config adds to.
type dryRunCounts struct {
	byNamespace sync.Map // namespace → *atomic.Int64
}

func (d *dryRunCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && req.URL.Query().Has("dryRun") {
		_, rest, _ := strings.Cut(req.URL.Path, "/namespaces/")
		ns, _, _ := strings.Cut(rest, "/")
		n, _ := d.counts.byNamespace.LoadOrStore(ns, &atomic.Int64{})
		n.(*atomic.Int64).Add(1)
	}
	return d.next.RoundTrip(req)
}

// in is how many dry runs went to objects of namespace ns.
//
//nolint:unparam // counts are per namespace; one case reads them so far
func (d *dryRunCounts) in(ns string) int64 {
	n, ok := d.byNamespace.Load(ns)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// startLayerEnv starts the environment; it is stopped when t ends.
func startLayerEnv(t *testing.T) *layerEnv {
	t.Helper()
	g := NewWithT(t)
	testenv.OperatorLog()
	crds := os.Getenv("KRAAN_SOURCE_CRDS")
	g.Expect(crds).NotTo(BeEmpty(), "KRAAN_SOURCE_CRDS is not set: run the tests with `make test`, "+
		"which collects Flux's source CRDs from source-controller's module and sets it")
	utilruntime.Must(sourcev1.AddToScheme(testenv.Scheme))
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true})
	g.Expect(err).NotTo(HaveOccurred())

	dryRuns := &dryRunCounts{}
	config := rest.CopyConfig(env.Config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &dryRunCounter{next: rt, counts: dryRuns} })
	mgr := testenv.NewManager(t, config)
	g.Expect(Setup(mgr, Options{
		ControllerOptions: kit.ControllerOptions{MaxConcurrentReconciles: 2},
		DataPath:          t.TempDir(), DefaultSourceNamespace: sourceNamespace,
		PlatformNamespaces: []string{platformNamespace},
	})).To(Succeed())
	testenv.RunManager(t, mgr)

	e := &layerEnv{c: env.Client, config: env.Config, artifacts: newArtifactServer(t), dryRuns: dryRuns}
	for _, ns := range []string{sourceNamespace, platformNamespace} {
		g.Expect(e.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	return e
}

// artifactServer serves tarballs by path, like source-controller's storage.
type artifactServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	n     int
}

func newArtifactServer(t *testing.T) *artifactServer {
	s := &artifactServer{files: map[string][]byte{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// publish serves files as a tarball and returns its artifact. tamper serves
// different bytes than the digest says.
func (s *artifactServer) publish(t *testing.T, files map[string]string, tamper bool) *fluxmeta.Artifact {
	body := tarGz(t, files)
	sum := sha256.Sum256(body)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if tamper {
		body = tarGz(t, map[string]string{"evil.yaml": "kind: Secret"})
	}
	s.mu.Lock()
	s.n++
	path := "/gitrepository/" + strings.TrimPrefix(digest, "sha256:")[:12] + ".tar.gz"
	s.files[path] = body
	rev := "main@sha1:" + strings.Repeat("0", 30) + strings.TrimPrefix(digest, "sha256:")[:10]
	s.mu.Unlock()
	return &fluxmeta.Artifact{Path: path, URL: s.srv.URL + path, Revision: rev, Digest: digest,
		LastUpdateTime: metav1.Now(), Size: ptr.To(int64(len(body)))}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, "/") { // a directory entry, for empty directories
			if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// setSource creates or updates GitRepository name with an artifact holding
// files, Ready for its current generation, as source-controller would.
func (e *layerEnv) setSource(t *testing.T, name string, files map[string]string, tamper bool) *fluxmeta.Artifact {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	repo := &sourcev1.GitRepository{}
	key := types.NamespacedName{Namespace: sourceNamespace, Name: name}
	if err := e.c.Get(ctx, key, repo); apierrors.IsNotFound(err) {
		repo = &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: sourceNamespace, Name: name},
			Spec:       sourcev1.GitRepositorySpec{URL: "https://git.example/addons", Interval: metav1.Duration{Duration: time.Hour}},
		}
		g.Expect(e.c.Create(ctx, repo)).To(Succeed())
	} else {
		g.Expect(err).NotTo(HaveOccurred())
	}
	art := e.artifacts.publish(t, files, tamper)
	repo.Status.ObservedGeneration = repo.Generation
	repo.Status.Artifact = art
	apimeta.SetStatusCondition(&repo.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
		Reason: "Succeeded", Message: "stored artifact for revision '" + art.Revision + "'", ObservedGeneration: repo.Generation})
	g.Expect(e.c.Status().Update(ctx, repo)).To(Succeed())
	return art
}

// layerOption changes a test layer.
type layerOption func(*kraanv1.AddonsLayer)

func dependsOn(items ...string) layerOption {
	return func(l *kraanv1.AddonsLayer) { l.Spec.Prereqs.DependsOn = items }
}

func k8sVersion(v string) layerOption {
	return func(l *kraanv1.AddonsLayer) { l.Spec.Prereqs.K8sVersion = v }
}

func interval(d time.Duration) layerOption {
	return func(l *kraanv1.AddonsLayer) { l.Spec.Interval = metav1.Duration{Duration: d} }
}

func timeout(d time.Duration) layerOption {
	return func(l *kraanv1.AddonsLayer) { l.Spec.Timeout = metav1.Duration{Duration: d} }
}

// createLayer creates a layer reading ./<path> of GitRepository repo.
func (e *layerEnv) createLayer(t *testing.T, name, repo, path string, opts ...layerOption) {
	t.Helper()
	l := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kraanv1.AddonsLayerSpec{Version: "1", Interval: metav1.Duration{Duration: time.Minute},
			Timeout: metav1.Duration{Duration: time.Minute},
			Source:  kraanv1.SourceSpec{Name: repo, Path: "./" + path}},
	}
	for _, o := range opts {
		o(l)
	}
	NewWithT(t).Expect(e.c.Create(context.Background(), l)).To(Succeed())
}

// layer reads a layer, failing the assertion's poll when it cannot or when
// a condition's message is not one a user can act on.
func (e *layerEnv) layer(g Gomega, name string) *kraanv1.AddonsLayer {
	l := &kraanv1.AddonsLayer{}
	g.Expect(e.c.Get(context.Background(), types.NamespacedName{Name: name}, l)).To(Succeed())
	for _, c := range l.Status.Conditions {
		g.Expect(testenv.MessageProblems(c.Message)).To(Succeed(), "condition %s", c.Type)
	}
	return l
}

// waitState waits until the layer reports state and returns it.
func (e *layerEnv) waitState(t *testing.T, name, state string) *kraanv1.AddonsLayer {
	t.Helper()
	var l *kraanv1.AddonsLayer
	NewWithT(t).Eventually(func(g Gomega) {
		l = e.layer(g, name)
		g.Expect(l.Status.State).To(Equal(state), "layer %s: %s", name, layerReadyMessage(l))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return l
}

func layerReadyMessage(l *kraanv1.AddonsLayer) string {
	if c := apimeta.FindStatusCondition(l.Status.Conditions, kraanv1.ReadyCondition); c != nil {
		return c.Message
	}
	return "<no Ready condition>"
}

func conditionStatus(l *kraanv1.AddonsLayer, t string) metav1.ConditionStatus {
	if c := apimeta.FindStatusCondition(l.Status.Conditions, t); c != nil {
		return c.Status
	}
	return ""
}

// markHelmReleaseReady sets a HelmRelease's Ready condition for its current
// generation.
// until the HelmRelease controller is wired: the test plays its part.
func (e *layerEnv) markHelmReleaseReady(g Gomega, namespace, name string) {
	hr := &kraanv1.HelmRelease{}
	g.Expect(e.c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, hr)).To(Succeed())
	hr.Status.ObservedGeneration = hr.Generation
	apimeta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: kraanv1.ReadyCondition,
		Status: metav1.ConditionTrue, Reason: kraanv1.ReasonInstallSucceeded, Message: "installed", ObservedGeneration: hr.Generation})
	g.Expect(e.c.Status().Update(context.Background(), hr)).To(Succeed())
}

// layerGauge returns the value of kraan_addonslayer_condition for a layer's
// condition type and status, and whether the series exists.
func layerGauge(t *testing.T, name, condType, status string) (float64, bool) {
	return gauge(t, "kraan_addonslayer_condition", map[string]string{"name": name, "type": condType, "status": status})
}

// awaitingGauge is kraan_addonslayer_awaiting_takeover of a layer, 0 when
// it is not reported.
func awaitingGauge(t *testing.T, name string) float64 {
	v, _ := awaitingSeries(t, name)
	return v
}

func awaitingSeries(t *testing.T, name string) (float64, bool) {
	return gauge(t, "kraan_addonslayer_awaiting_takeover", map[string]string{"name": name})
}

// gauge returns the value of the series of family with labels, and whether
// it exists.
func gauge(t *testing.T, family string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m, labels) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}
