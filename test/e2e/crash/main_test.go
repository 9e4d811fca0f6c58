// Package crash_test proves that a HelmRelease recovers when the operator is
// killed in the middle of a Helm operation. The operator binary, built from
// ./cmd, runs as a separate process against a local control plane of the
// suite's own (no other operator reconciles the same objects); the tests
// SIGKILL it while Helm storage shows the operation in flight
// (pending-install, pending-upgrade), start a new process and check what it
// makes of the release Helm left locked.
//
// A Deployment whose pods select a node label nobody has set yet keeps Helm's
// wait, and so the operation, in flight for as long as a test needs: kwok
// makes pods Ready within a second once they are scheduled, so nothing else
// gives a reliable window. The test sets the label once the operator is dead.
package crash_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// leaseNamespace holds the leader election Lease: the operator runs with
// --leader-elect, as config/manager deploys it, so a killed process's Lease
// must expire before its successor reconciles anything.
const leaseNamespace = "kraan-system"

// The suite's shared state, set up once by setUp.
var (
	// k8s is the admin client of the plane.
	k8s client.Client
	// kubeconfig is the path of the plane's admin kubeconfig, which the
	// operator processes use.
	kubeconfig string
	// operatorBinary is ./cmd, built once for every process the tests start.
	operatorBinary string
)

func TestMain(m *testing.M) {
	// No operator in the test process: the tests run the binary themselves.
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true}, setUp))
}

// setUp builds the operator and creates the Lease's namespace.
func setUp(s *suite.Suite) (err error) {
	k8s, kubeconfig = s.Client, s.Kubeconfig
	operatorBinary, err = suite.PrepareOperatorBinary(s, leaseNamespace)
	return err
}
