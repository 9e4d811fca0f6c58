// Package uninstall_test proves `kubectl kraan uninstall` on the local
// control plane: the operator is deployed as `make deploy` deploys it
// (config/default), its Deployment's pod bound to a real operator process
// built from ./cmd, and manages standalone HelmReleases, an AddonsLayer that
// applies a ConfigMap and a HelmRelease, and a Habitat. Uninstalling it must
// leave every Helm release, its records and every object in place; running
// it again must adopt them without a new revision or a re-created object.
//
// Sources (a Git server, a Helm repository and Flux source-controller) are
// test/env.Sources, as in test/e2e/soak.
package uninstall_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/env"
)

// The suite's shared state, set up once by setUp.
var (
	// k8s is the admin client of the plane.
	k8s client.Client
	// kubeconfig is the plane's admin kubeconfig, for the operator and the plugin.
	kubeconfig string
	// sources serve the layer (Git) and the chart (Helm repository).
	sources *env.Sources
	// operatorBinary is ./cmd, built once.
	operatorBinary string
	// workDir holds the operators' logs; kept when a test fails.
	workDir string
	// restConfig is the plane's admin config, to install the CRDs again.
	restConfig *rest.Config
)

func TestMain(m *testing.M) {
	// No operator in the test process: the tests run the binary as the
	// Deployment's pod.
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true}, setUp))
}

// setUp builds the operator and starts the sources with the small chart.
func setUp(s *suite.Suite) error {
	k8s, kubeconfig, restConfig = s.Client, s.Kubeconfig, s.Config
	scBin := os.Getenv("KRAAN_SOURCE_CONTROLLER")
	if scBin == "" {
		return errors.New("KRAAN_SOURCE_CONTROLLER is not set: run the tests with `make test`, which builds Flux source-controller and sets it")
	}
	var err error
	if workDir, err = os.MkdirTemp("", "kraan-e2e-uninstall-"); err != nil {
		return err
	}
	s.Cleanup(func(code int) {
		if code != 0 {
			fmt.Fprintln(os.Stderr, "uninstall: the operators' logs are in", workDir)
			return
		}
		_ = os.RemoveAll(workDir)
	})
	if operatorBinary, err = suite.BuildOperator(s.Context(), workDir); err != nil {
		return err
	}
	sources, err = env.StartSources(s.Context(), env.SourcesOptions{
		Dir: filepath.Join(workDir, "sources"), SourceController: scBin, Kubeconfig: kubeconfig, Client: k8s,
	})
	if err != nil {
		return err
	}
	s.Cleanup(func(int) { _ = sources.Stop() })
	return sources.AddChart(chartrepo.ChartDir("small"), "0.1.0")
}
