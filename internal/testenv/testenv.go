// Package testenv starts a real kube-apiserver and etcd (controller-runtime's
// envtest) with the operator's CRDs installed, for tests of API validation and
// controllers. The binaries come from KUBEBUILDER_ASSETS, which `make test`
// sets to the tool cache; a test that cannot find them fails rather than skips.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

// Scheme knows the built-in kinds, CRDs and the operator's kinds.
var Scheme = newScheme()

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

// Watches loads the repository's watches.yaml: the chart-backed kinds the
// operator's image runs, for tests that run the manager as cmd/main.go does.
func Watches() ([]watches.Watch, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return watches.Load(filepath.Join(root, "watches.yaml"))
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
