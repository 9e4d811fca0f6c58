// Package namespaced_test proves the namespaced installation end to end on
// the local control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok): config/namespaced is built with `kubectl kustomize`
// and applied as a user would, except for the Deployment, whose container
// cannot run here. The operator binary runs instead with that Deployment's
// arguments (--watch-namespace among them), authenticated as the overlay's
// ServiceAccount by a TokenRequest token, so it has the overlay's RBAC and
// nothing more.
package namespaced_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kraan-io/kraan-operator/internal/testenv"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// The suite's shared state, set up once by runSuite.
var (
	// k8s is the admin client of the plane.
	k8s client.Client
	// overlay is what `kubectl kustomize config/namespaced` built.
	overlay *install
	// op is the operator, running as the overlay's ServiceAccount.
	op *operator
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logf.SetLogger(logr.Discard()) // envtest's CRD installer logs; the operator logs to a file
	// KRAAN_E2E_PLANE_DIR keeps the plane's logs for a look after the run.
	plane, err := localplane.Start(ctx, localplane.Options{Dir: os.Getenv("KRAAN_E2E_PLANE_DIR")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = plane.Stop() }()
	cfg := plane.RESTConfig()
	if err := testenv.InstallCRDs(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: testenv.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	work, err := os.MkdirTemp("", "kraan-e2e-namespaced-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(work) }()
	if overlay, err = buildOverlay(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := overlay.apply(ctx, k8s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if op, err = startOperator(ctx, cfg, overlay, work); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := op.stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, op.logTail(60))
	}
	return code
}
