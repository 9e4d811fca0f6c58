// Package tenancy_test proves the multi-tenancy and sharding flags on the
// local control plane with the operator binary itself: three processes
// sharded with --watch-label-selector (Flux's sharding.fluxcd.io/key
// convention) each reconcile exactly their own HelmReleases, and
// --no-cross-namespace-refs refuses a release whose chart lives in another
// namespace.
package tenancy_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// leaseNamespace holds the shards' leader election Leases.
const leaseNamespace = "kraan-system"

var (
	k8s            client.Client
	kubeconfig     string
	operatorBinary string
)

func TestMain(m *testing.M) {
	// No operator in the test process: the tests run the binary themselves.
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true}, func(s *suite.Suite) (err error) {
		k8s, kubeconfig = s.Client, s.Kubeconfig
		operatorBinary, err = suite.PrepareOperatorBinary(s, leaseNamespace)
		return err
	}))
}
