// Package testenv starts a real kube-apiserver and etcd (controller-runtime's
// envtest) with the operator's CRDs installed, for tests of API validation and
// controllers. The binaries come from KUBEBUILDER_ASSETS, which `make test`
// sets to the tool cache; a test that cannot find them fails rather than skips.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Scheme knows the built-in kinds, CRDs and the operator's kinds.
var Scheme = newScheme()

// RecordKey is the key the operators that tests start sign release records
// with (operator.Options.RecordKey), so that a test editing a record can sign
// it again as the operator would (helm.SignRecord).
var RecordKey = []byte("kraan-e2e-release-record-key-0123456789")

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(kraanv1.AddToScheme(s))
	utilruntime.Must(habitatv1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	return s
}

// Env is a running API server with the operator's CRDs.
type Env struct {
	env    *envtest.Environment
	Config *rest.Config
	Client client.Client
}

// Start starts etcd and kube-apiserver from KUBEBUILDER_ASSETS and installs the
// CRDs generated into config/crd/bases.
func Start() (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, " +
			"which builds etcd and kube-apiserver into the tool cache and sets it")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return &Env{env: env, Config: cfg, Client: c}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

// RepoRoot is the directory holding the operator's go.mod, found from the
// working directory upwards (tests run in their package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// WatchesFile is the path of the repository's watches.yaml: the chart-backed
// kinds the operator's image runs, for tests that run the manager as
// cmd/main.go does (watches.Load reads it).
func WatchesFile() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "watches.yaml"), nil
}

// WriteKubeconfig writes a kubeconfig for the environment's admin user to
// path, for code under test that takes a --kubeconfig flag.
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: "test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding a user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering a kubeconfig: %w", err)
	}
	return os.WriteFile(path, data, 0o600)
}

// InlineKubeconfig is cfg as a kubeconfig carrying its credentials inline,
// as the operator requires of the clusters it is given; user, if set,
// changes the user's entry.
func InlineKubeconfig(cfg *rest.Config, user func(*clientcmdapi.AuthInfo)) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	if user != nil {
		user(kc.AuthInfos["u"])
	}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	return clientcmd.Write(*kc)
}

// RegisterCluster creates, in ns, a FleetCluster named name with labels and
// the Secret holding its kubeconfig.
func RegisterCluster(ctx context.Context, c client.Client, ns, name string, labels map[string]string, kubeconfig []byte) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-kubeconfig"},
		Data: map[string][]byte{"value": kubeconfig}}
	if err := c.Create(ctx, secret); err != nil {
		return err
	}
	return c.Create(ctx, &kraanv1.FleetCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: kraanv1.FleetClusterSpec{KubeConfig: kraanv1.KubeConfigReference{
			SecretRef: &kraanv1.SecretKeyReference{Name: secret.Name}}}})
}

// InstallCRDs installs the operator's CRDs and Flux's source CRDs (from
// KRAAN_SOURCE_CRDS, which `make test` sets) into the cluster of cfg, such as
// a local control plane, which the operator's controllers watch.
func InstallCRDs(cfg *rest.Config) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	fluxCRDs := os.Getenv("KRAAN_SOURCE_CRDS")
	if fluxCRDs == "" {
		return errors.New("KRAAN_SOURCE_CRDS is not set: run the tests with `make test`, which collects Flux's source CRDs")
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "config", "crd", "bases"), fluxCRDs},
		ErrorIfPathMissing: true,
	})
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// NewManager returns a manager on cfg for a test: the operator's scheme, no
// metrics server, and controller names not checked for uniqueness, since the
// tests of a package start one manager each in one process. Each of with
// changes those options, e.g. to cache as the operator does.
func NewManager(t testing.TB, cfg *rest.Config, with ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	opts := ctrl.Options{
		Scheme:     Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, w := range with {
		w(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	return mgr
}

// RunManager starts mgr until t ends, and fails t when it stops with an error.
func RunManager(t testing.TB, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
	})
}

// CreateNamespace creates namespace name, or fails t.
func CreateNamespace(t testing.TB, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

var (
	operatorLog     = &LockedBuffer{}
	operatorLogOnce sync.Once
)

// OperatorLog sends the process's controller-runtime log, debug included (as
// --log-level=debug), to a buffer the first time it is called, and returns
// that buffer: the canary tests search what the operator logs.
func OperatorLog() *LockedBuffer {
	operatorLogOnce.Do(func() {
		ctrl.SetLogger(zap.New(zap.WriteTo(operatorLog), zap.UseDevMode(true), zap.Level(zapcore.DebugLevel)))
	})
	return operatorLog
}

// LockedBuffer is a bytes.Buffer safe for concurrent writes and reads: a
// log sink that a test searches while the operator writes to it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// structDump matches Go values printed with %#v or %+v, such as
// "&value.valueUnstructured{Value:1}" or "v1.ObjectMeta{Name:…}".
var structDump = regexp.MustCompile(`&?\b[a-z][a-z0-9]*\.[A-Za-z][A-Za-z0-9]*\{[A-Z][A-Za-z]*:`)

// MessageProblems says what makes a condition or event message one a user
// cannot act on — a "<nil>" where a cause should be, a broken format verb
// ("%!"), a Go struct dump — or returns nil. Tests pass every message they
// read through it.
func MessageProblems(msg string) error {
	var problems []string
	if strings.Contains(msg, "<nil>") {
		problems = append(problems, `"<nil>"`)
	}
	if strings.Contains(msg, "%!") {
		problems = append(problems, `a broken format verb "%!"`)
	}
	if m := structDump.FindString(msg); m != "" {
		problems = append(problems, fmt.Sprintf("a Go struct dump %q", m))
	}
	if len(msg) > kit.MaxMessageLength {
		problems = append(problems, fmt.Sprintf("%d bytes, over the bound of %d", len(msg), kit.MaxMessageLength))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("message holds %s: %s", strings.Join(problems, ", "), msg)
}

// GatheredMetrics is the text the process's controller-runtime metrics
// registry would serve on /metrics, for tests that search it.
func GatheredMetrics(t testing.TB) string {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// CanaryLeak returns the neighbourhood of the first canary found in text,
// for a test's failure message, or "" when text holds none of them.
func CanaryLeak(text string, canaries []string) string {
	for _, c := range canaries {
		if i := strings.Index(text, c); i >= 0 {
			return "…" + text[max(0, i-200):min(len(text), i+len(c)+200)] + "…"
		}
	}
	return ""
}

// OperatorCRDNames are the names of the operator's CRDs, read from the files
// generated into config/crd/bases, so that a test which installs, checks or
// deletes "all of the operator's CRDs" cannot miss a kind added later.
func OperatorCRDNames(t testing.TB) []string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	opts := &envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true}
	if err := envtest.ReadCRDFiles(opts); err != nil {
		t.Fatalf("reading the operator's CRDs: %v", err)
	}
	names := make([]string, 0, len(opts.CRDs))
	for _, crd := range opts.CRDs {
		names = append(names, crd.Name)
	}
	slices.Sort(names)
	return names
}
