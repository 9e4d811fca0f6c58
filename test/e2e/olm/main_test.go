// Package olm_test proves the operator's distribution end to end on the local
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok): OLM's operators install the bundle from a catalog
// served by opm through a Subscription and upgrade it through `replaces`; the
// operator runs with the permissions the CSV granted; and the Helm chart in
// dist/chart installs with the Helm SDK under the restricted Pod Security
// Standard. OLM and opm come from `make olm-tools` (KRAAN_OLM,
// KRAAN_OLM_CATALOG, KRAAN_OPM, exported by the Makefile).
package olm_test

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// k8s is the admin client of the plane the suite runs on; cfg its config and
// kubeconfig the path of its kubeconfig file.
var (
	k8s        client.Client
	cfg        *rest.Config
	kubeconfig string
)

// TestMain starts a bare plane: the tests install OLM's CRDs themselves, and
// the operator's come with the bundle or the chart, as on a real cluster.
func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, suite.Options{}, func(s *suite.Suite) error {
		k8s, cfg, kubeconfig = s.Client, s.Config, s.Kubeconfig
		return nil
	}))
}
