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
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kraan-io/kraan-operator/internal/testenv"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// k8s is the admin client of the plane the suite runs on; cfg its config and
// kubeconfig the path of its kubeconfig file.
var (
	k8s        client.Client
	cfg        *rest.Config
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logf.SetLogger(logr.Discard()) // envtest's CRD installer logs; the processes log to files
	// KRAAN_E2E_PLANE_DIR keeps the plane's logs for a look after the run.
	plane, err := localplane.Start(ctx, localplane.Options{Dir: os.Getenv("KRAAN_E2E_PLANE_DIR")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = plane.Stop() }()
	cfg, kubeconfig = plane.RESTConfig(), plane.Kubeconfig()
	if k8s, err = client.New(cfg, client.Options{Scheme: testenv.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
