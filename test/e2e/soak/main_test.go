// Package soak_test runs the operator binary for a while under a mixed
// workload and disruption, and then checks that nothing was lost or done
// twice: four chained AddonsLayers of HelmReleases, standalone HelmReleases
// and a Habitat take values changes, chart version bumps, layer version
// bumps and deletions, while the operator process is SIGKILLed at random
// moments and kube-apiserver is restarted mid-rollout. At the end every
// object must be Ready in its final desired state, with no Helm release
// left pending, no revision that no spec change or documented crash
// recovery explains, nothing uninstalled that the workload did not delete,
// and no panic in any operator log (see TestSoak and checks_test.go).
//
// `go test ./...` runs a short soak (about three minutes); `make soak` the
// full one (KRAAN_SOAK_SIZE=full). The random schedule comes from a seed the
// test prints; KRAAN_SOAK_SEED replays it. size_test.go lists every knob.
//
// The operator runs as a separate process, as in test/e2e/crash, against a
// local control plane of the suite's own, with a real Flux
// source-controller serving the layers from a Git server and the chart from
// a Helm repository (test/env.Sources).
package soak_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/env"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// leaseNamespace holds the leader election Lease: the operator runs with
// --leader-elect, as config/manager deploys it.
const leaseNamespace = "kraan-system"

// chartVersions are the versions of testdata/charts/small the Helm
// repository serves: the workload bumps releases between them.
var chartVersions = []string{"0.1.0", "0.2.0", "0.3.0"}

// The suite's shared state, set up once by setUp.
var (
	// k8s is the admin client of the plane.
	k8s client.Client
	// restConfig is its configuration, for the informers that record UIDs
	// and the reads of Helm storage.
	restConfig *rest.Config
	// kubeconfig is the path of the admin kubeconfig the operators use.
	kubeconfig string
	// plane is the local control plane, whose apiserver the soak restarts.
	plane *localplane.Plane
	// sources serve the layers (Git) and the chart (Helm repository).
	sources *env.Sources
	// operatorBinary is ./cmd, built once.
	operatorBinary string
	// workDir holds the operators' logs and the layers' files; it is kept
	// when a test fails, or always with KRAAN_SOAK_KEEP set.
	workDir string
)

func TestMain(m *testing.M) {
	// No operator in the test process: the soak runs the binary itself.
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true}, setUp))
}

// setUp builds the operator, creates the Lease's namespace and starts the
// sources with every chart version published.
func setUp(s *suite.Suite) error {
	k8s, restConfig, kubeconfig, plane = s.Client, s.Config, s.Kubeconfig, s.Plane
	scBin := os.Getenv("KRAAN_SOURCE_CONTROLLER")
	if scBin == "" {
		return errors.New("KRAAN_SOURCE_CONTROLLER is not set: run the tests with `make test` or `make soak`, which build Flux source-controller and set it")
	}
	var err error
	if workDir, err = os.MkdirTemp("", "kraan-soak-"); err != nil {
		return err
	}
	s.Cleanup(func(code int) {
		if code != 0 || os.Getenv("KRAAN_SOAK_KEEP") != "" {
			fmt.Fprintf(os.Stderr, "soak: operator logs and layer files kept in %s\n", workDir)
			return
		}
		_ = os.RemoveAll(workDir)
	})
	if operatorBinary, err = suite.BuildOperator(s.Context(), workDir); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}
	if err := k8s.Create(s.Context(), ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", leaseNamespace, err)
	}
	sources, err = env.StartSources(s.Context(), env.SourcesOptions{
		Dir: filepath.Join(workDir, "sources"), SourceController: scBin, Kubeconfig: kubeconfig, Client: k8s,
	})
	if err != nil {
		return err
	}
	s.Cleanup(func(int) { _ = sources.Stop() })
	return sources.AddChart(chartrepo.ChartDir("small"), chartVersions...)
}
