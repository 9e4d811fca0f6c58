// Package migration_test proves the migration from Flux helm-controller to
// kraan-operator (docs/migrating-from-flux.md) with the real peer: Flux
// helm-controller v1.4.5 and source-controller install releases on the local
// control plane, then helm-controller is stopped and kraan-operator, built
// from ./cmd and run as a separate process, takes over the same Helm releases
// from the same HelmRelease YAML. Nothing may be uninstalled, no pod
// restarted and no release upgraded when what it deploys is unchanged.
//
// It needs the binaries `make test` builds into the tool cache; without them
// it fails, naming `make test`, rather than skipping: a migration proof that
// silently does not run proves nothing.
package migration_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/env"
)

// The suite's shared state, set up once by setUp.
var (
	// k8s is an admin client of the plane that knows Flux's HelmRelease too.
	k8s client.Client
	// kubeconfig is the plane's admin kubeconfig, which the controllers use;
	// restConfig the same as a client configuration.
	kubeconfig string
	restConfig *rest.Config
	// helmControllerBinary is Flux helm-controller ($KRAAN_HELM_CONTROLLER).
	helmControllerBinary string
	// operatorBinary is ./cmd, built once; pluginBinary ./cmd/kubectl-kraan,
	// which the guides run as `kubectl kraan`.
	operatorBinary, pluginBinary string
)

// toolVars are the variables `make test` exports for this suite, besides
// KRAAN_SOURCE_CRDS, which suite.Run's CRD installation checks itself.
// KRAAN_HELM_CLI is the Helm CLI the guides' `helm history` runs;
// KUBEBUILDER_ASSETS holds their kubectl.
var toolVars = []string{"KRAAN_HELM_CONTROLLER", "KRAAN_HELM_CONTROLLER_CRDS", "KRAAN_SOURCE_CONTROLLER", "KRAAN_HELM_CLI", "KUBEBUILDER_ASSETS"}

func TestMain(m *testing.M) {
	if err := checkToolVars(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// No operator in the test process: the test runs the binary itself,
	// after helm-controller, as a cluster would.
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true}, setUp))
}

// checkToolVars fails the package when a tool it runs is unknown.
func checkToolVars() error {
	var missing []error
	for _, name := range toolVars {
		if os.Getenv(name) == "" {
			missing = append(missing, fmt.Errorf("%s is not set: run `make test` (or `make test-e2e`), which builds the tools and sets it", name))
		}
	}
	return errors.Join(missing...)
}

// setUp installs Flux's HelmRelease CRD, starts source-controller for the
// whole suite and builds the operator.
func setUp(s *suite.Suite) error {
	kubeconfig, restConfig, helmControllerBinary = s.Kubeconfig, s.Config, os.Getenv("KRAAN_HELM_CONTROLLER")
	if _, err := envtest.InstallCRDs(s.Config, envtest.CRDInstallOptions{
		Paths: []string{os.Getenv("KRAAN_HELM_CONTROLLER_CRDS")}, ErrorIfPathMissing: true,
	}); err != nil {
		return fmt.Errorf("installing Flux's HelmRelease CRD: %w", err)
	}
	var err error
	if k8s, err = client.New(s.Config, client.Options{Scheme: newScheme()}); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "kraan-e2e-migration-")
	if err != nil {
		return err
	}
	s.Cleanup(func(code int) {
		if code == 0 {
			_ = os.RemoveAll(work)
		} else {
			fmt.Fprintln(os.Stderr, "migration: the controllers' logs are in", work)
		}
	})
	if operatorBinary, err = suite.BuildOperator(s.Context(), work); err != nil {
		return err
	}
	if pluginBinary, err = suite.BuildPlugin(s.Context(), work); err != nil {
		return err
	}
	sc, err := env.StartSourceController(os.Getenv("KRAAN_SOURCE_CONTROLLER"), kubeconfig, filepath.Join(work, "source-controller"))
	if err != nil {
		return err
	}
	s.Cleanup(func(int) { _ = sc.Stop(stopGrace) })
	return nil
}

// stopGrace is how long a stopped controller has between SIGTERM
// and SIGKILL: neither has work in flight when the test stops it.
const stopGrace = suite.OperatorStopTimeout

// newScheme knows the built-in kinds, kraan-operator's, Flux's sources and
// Flux's HelmRelease.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kraanv1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(helmv2.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}
