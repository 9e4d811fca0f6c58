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
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// The suite's shared state, set up once by setUp.
var (
	// k8s is the admin client of the plane.
	k8s client.Client
	// overlay is what `kubectl kustomize config/namespaced` built.
	overlay *install
	// op is the operator, running as the overlay's ServiceAccount.
	op *suite.RunningOperator
)

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true}, setUp))
}

// setUp applies the overlay and starts the operator binary with it.
func setUp(s *suite.Suite) error {
	k8s = s.Client
	work, err := os.MkdirTemp("", "kraan-e2e-namespaced-")
	if err != nil {
		return err
	}
	s.Cleanup(func(int) { _ = os.RemoveAll(work) })
	if overlay, err = buildOverlay(s.Context()); err != nil {
		return err
	}
	if err := overlay.apply(s.Context(), k8s); err != nil {
		return err
	}
	if op, err = startOperator(s.Context(), s.Config, overlay, work); err != nil {
		return err
	}
	s.Cleanup(func(code int) {
		if err := op.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		if code != 0 {
			fmt.Fprintln(os.Stderr, op.LogTail(60))
		}
	})
	return nil
}
