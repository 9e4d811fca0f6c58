package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/addonslayer"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/operator"
	"github.com/kraan-io/kraan-operator/internal/source"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/env"
	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

const (
	fluxNamespace = "flux-system"
	repoName      = "addons"
	gitBackend    = "/usr/lib/git-core/git-http-backend"
)

// harness is one local plane with source-controller, a Git server and the
// operator's AddonsLayer controller.
type harness struct {
	t        *testing.T
	c        client.WithWatch
	cfg      *rest.Config
	dir      string // everything the harness writes is below it
	work     string // the Git work tree tests commit to
	bare     string
	gitURL   string // the bare repository over HTTP
	storage  string // source-controller's --storage-path
	data     string // the operator's artifact store (--data-path)
	recorder *recorder
	// kubeconfig is the plane's admin kubeconfig file.
	kubeconfig string
}

func requireEnv(t *testing.T, name, why string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the e2e tests with `make test-e2e`, which builds %s and sets it", name, why)
	}
	return v
}

// startHarness brings everything up; it is torn down when t ends.
func startHarness(t *testing.T) *harness { return startHarnessWith(t, nil) }

// startHarnessWith is startHarness with the operator's platform namespaces
// (--platform-namespaces), where clusters are registered.
func startHarnessWith(t *testing.T, platformNamespaces []string) *harness {
	g := NewWithT(t)
	scBin := requireEnv(t, "KRAAN_SOURCE_CONTROLLER", "Flux source-controller")
	scCRDs := requireEnv(t, "KRAAN_SOURCE_CRDS", "Flux's source CRDs")
	requireEnv(t, "KUBEBUILDER_ASSETS", "the control plane")
	if _, err := os.Stat(gitBackend); err != nil {
		t.Fatalf("git-http-backend not found at %s: install Debian's git: %v", gitBackend, err)
	}
	dir := t.TempDir()
	plane, err := localplane.Start(t.Context(), localplane.Options{Dir: filepath.Join(dir, "plane")})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = plane.Stop() })
	cfg := plane.RESTConfig()
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases"), scCRDs}, ErrorIfPathMissing: true})
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	h := &harness{t: t, c: c, cfg: rest.CopyConfig(cfg), dir: dir, work: filepath.Join(dir, "work"), bare: filepath.Join(dir, "git", repoName+".git"),
		storage: filepath.Join(dir, "storage"), data: filepath.Join(dir, "data")}
	h.kubeconfig = plane.Kubeconfig()
	h.gitURL = h.startGitServer()
	startSourceController(t, scBin, plane.Kubeconfig(), h.storage)
	h.startOperator(cfg, dir, platformNamespaces)
	h.recorder = startRecorder(t, c)
	g.Expect(c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNamespace}})).To(Succeed())
	h.createGitSource(repoName, "main")
	// The layers' HelmReleases install the project's small test chart from an
	// in-process Helm repository, with the real HelmRelease controller.
	charts := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	g.Expect(c.Create(t.Context(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "charts"},
		Spec:       sourcev1.HelmRepositorySpec{URL: charts.URL, Interval: metav1.Duration{Duration: time.Hour}},
	})).To(Succeed())
	return h
}

// forTest returns the harness for a subtest: helpers fail t, not the test
// that started the harness (FailNow must run on the failing test's goroutine).
func (h *harness) forTest(t *testing.T) *harness {
	sub := *h
	sub.t = t
	return &sub
}

// startGitServer serves the bare repository over smart HTTP.
func (h *harness) startGitServer() string {
	g := NewWithT(h.t)
	g.Expect(os.MkdirAll(h.work, 0o755)).To(Succeed())
	h.git(filepath.Dir(h.work), "init", "--bare", "--initial-branch=main", h.bare)
	h.git(h.work, "init", "--initial-branch=main")
	l, err := (&net.ListenConfig{}).Listen(h.t.Context(), "tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: &cgi.Handler{
		Path: gitBackend,
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(h.bare), "GIT_HTTP_EXPORT_ALL=1"},
	}}
	go func() { _ = srv.Serve(l) }()
	h.t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String() + "/" + repoName + ".git"
}

// git runs git in dir and fails the test on error.
func (h *harness) git(dir string, args ...string) string {
	cmd := exec.CommandContext(h.t.Context(), "git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@kraan.io"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// createGitSource creates a GitRepository named name following branch of the
// harness's Git repository. Tests that need a source of their own (so that
// their commits do not touch other tests' layers) use one branch each.
func (h *harness) createGitSource(name, branch string) {
	NewWithT(h.t).Expect(h.c.Create(h.t.Context(), &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: name},
		Spec: sourcev1.GitRepositorySpec{URL: h.gitURL, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: branch}},
	})).To(Succeed())
}

// commit replaces the work tree with files, commits, pushes to main and asks
// source-controller to fetch at once; it returns the revision.
func (h *harness) commit(files map[string]string) string {
	return h.commitTo(repoName, "main", files)
}

// commitTo is commit for the GitRepository source following branch.
func (h *harness) commitTo(source, branch string, files map[string]string) string {
	g := NewWithT(h.t)
	entries, err := os.ReadDir(h.work)
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		if e.Name() != ".git" {
			g.Expect(os.RemoveAll(filepath.Join(h.work, e.Name()))).To(Succeed())
		}
	}
	for name, body := range files {
		p := filepath.Join(h.work, name)
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
	}
	h.git(h.work, "add", "-A")
	h.git(h.work, "commit", "--allow-empty", "-q", "-m", "change")
	h.git(h.work, "push", "-q", "-f", h.bare, "HEAD:"+branch)
	sha := h.git(h.work, "rev-parse", "HEAD")
	rev := branch + "@sha1:" + sha[:40]
	h.requestReconcile(&sourcev1.GitRepository{}, source)
	g.Eventually(func(g Gomega) {
		repo := &sourcev1.GitRepository{}
		g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: fluxNamespace, Name: source}, repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).NotTo(BeNil())
		g.Expect(repo.Status.Artifact.Revision).To(Equal(rev))
		// Settled: a reconcile still to come for a newer generation would
		// verify the stored artifact again and replace a file a test
		// changed on purpose.
		g.Expect(repo.Status.ObservedGeneration).To(Equal(repo.Generation))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return rev
}

// requestReconcile is `flux reconcile source git|oci <name>`: the annotation
// Flux controllers react to, on the source in flux-system read into obj.
func (h *harness) requestReconcile(obj client.Object, name string) {
	NewWithT(h.t).Eventually(func(g Gomega) {
		g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: fluxNamespace, Name: name}, obj)).To(Succeed())
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations["reconcile.fluxcd.io/requestedAt"] = strconv.FormatInt(time.Now().UnixNano(), 10)
		obj.SetAnnotations(annotations)
		g.Expect(h.c.Update(h.t.Context(), obj)).To(Succeed())
	}).Should(Succeed())
}

// startSourceController runs the real source-controller against the plane
// until the test ends, and shows the tail of its log when the test failed.
func startSourceController(t *testing.T, bin, kubeconfig, storage string) {
	sc, err := env.StartSourceController(bin, kubeconfig, storage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sc.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("source-controller log (tail):\n%s", sc.LogTail(30))
		}
	})
}

// operatorLog is where the in-process operators log: the test running now's
// operator.log. controller-runtime's logger is set once per process, so a
// second SetLogger would leave every later test writing to the first test's
// (closed) file.
var operatorLog = &switchingWriter{w: io.Discard}

func init() {
	ctrl.SetLogger(zap.New(zap.WriteTo(operatorLog), zap.UseDevMode(true)))
}

// switchingWriter writes to the writer it was last switched to.
type switchingWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchingWriter) switchTo(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

func (s *switchingWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// artifactFileCap is the harness operator's --max-artifact-file-size.
const artifactFileCap = 1 << 20

// startOperator runs the AddonsLayer controller in-process.
func (h *harness) startOperator(cfg *rest.Config, dir string, platformNamespaces []string) {
	g := NewWithT(h.t)
	// client-go's default 20 QPS throttles a burst of server-side dry runs by
	// seconds; Flux controllers run with 50 QPS, burst 300.
	cfg.QPS, cfg.Burst = 50, 300
	logFile, err := os.Create(filepath.Join(dir, "operator.log"))
	g.Expect(err).NotTo(HaveOccurred())
	h.t.Cleanup(func() {
		_ = logFile.Close()
		if h.t.Failed() { // keep the operator's log, the test directory goes away
			kept := filepath.Join(os.TempDir(), "kraan-e2e-operator.log")
			if b, err := os.ReadFile(logFile.Name()); err == nil && os.WriteFile(kept, b, 0o600) == nil {
				h.t.Logf("operator log kept in %s", kept)
			}
		}
	})
	operatorLog.switchTo(logFile)
	h.t.Cleanup(func() { operatorLog.switchTo(io.Discard) })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: testenv.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:      operator.CacheOptions(nil), // as the binary caches
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(operator.SetupAll(mgr, operator.Options{
		ControllerOptions:  kit.ControllerOptions{MaxConcurrentReconciles: 4},
		RecordKey:          testenv.RecordKey,
		ChartArtifactsDir:  filepath.Join(dir, "chart-artifacts"),
		PlatformNamespaces: platformNamespaces,
		Layers: addonslayer.Options{
			DataPath: h.data, DefaultSourceNamespace: fluxNamespace,
		},
		// Below the default, so a test can go over it cheaply.
		ArtifactLimits: source.Options{MaxFileBytes: artifactFileCap},
	})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("operator stopped with an error: %v", err)
		}
	})
}

// transition is a layer's state as the watch saw it.
type transition struct {
	layer, state, version string
	at                    time.Time
}

// recorder keeps every state change of every layer, with the time the watch
// delivered it: the clock that orders layers and measures gaps.
type recorder struct {
	mu  sync.Mutex
	log []transition
}

func startRecorder(t *testing.T, c client.WithWatch) *recorder {
	r := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.recordNamespaces(ctx, c)
	last := map[string]string{}
	go func() {
		for ctx.Err() == nil {
			w, err := c.Watch(ctx, &kraanv1.AddonsLayerList{})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				l, ok := ev.Object.(*kraanv1.AddonsLayer)
				if !ok {
					continue
				}
				key := l.Status.State + "@" + l.Status.Version
				if last[l.Name] == key {
					continue
				}
				last[l.Name] = key
				r.mu.Lock()
				r.log = append(r.log, transition{layer: l.Name, state: l.Status.State, version: l.Status.Version, at: time.Now()})
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// firstObject is the pseudo-state recorded when the first object of a layer
// (its Namespace, applied first) appears: the moment the layer started applying.
const firstObject = "FirstObject"

// recordNamespaces records when each layer's Namespace is created.
func (r *recorder) recordNamespaces(ctx context.Context, c client.WithWatch) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &corev1.NamespaceList{}, client.HasLabels{manifest.LayerLabel})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			ns, ok := ev.Object.(*corev1.Namespace)
			if !ok || ev.Type != watch.Added {
				continue
			}
			r.mu.Lock()
			r.log = append(r.log, transition{layer: ns.Labels[manifest.LayerLabel], state: firstObject, at: time.Now()})
			r.mu.Unlock()
		}
	}
}

// first returns when layer first entered state at version after since.
func (r *recorder) first(layer, state, version string, since time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tr := range r.log {
		if tr.layer == layer && tr.state == state && tr.version == version && !tr.at.Before(since) {
			return tr.at, true
		}
	}
	return time.Time{}, false
}

// started returns when layer first went past waiting (Applying or Deployed)
// at version after since.
func (r *recorder) started(layer, version string, since time.Time) (time.Time, bool) {
	a, okA := r.first(layer, kraanv1.ApplyingState, version, since)
	d, okD := r.first(layer, kraanv1.DeployedState, version, since)
	switch {
	case okA && (!okD || a.Before(d)):
		return a, true
	case okD:
		return d, true
	}
	return time.Time{}, false
}
