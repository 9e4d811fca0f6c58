// Package helmreleases_test proves the HelmRelease controller end to end on
// the local control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok): charts served by an in-process Helm repository are
// installed, upgraded, tested, rolled back and uninstalled by the operator's
// manager running in this process, and Deployments really roll out on the
// fake node, so Helm's wait has something real to wait for.
package helmreleases_test

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

func TestMain(m *testing.M) {
	o := suite.Options{InstallCRDs: true, Operator: &suite.Operator{}}
	os.Exit(suite.Run(m, o, func(s *suite.Suite) error {
		k8s, cfg, kubeconfig = s.Client, s.Config, s.Kubeconfig
		return nil
	}))
}
