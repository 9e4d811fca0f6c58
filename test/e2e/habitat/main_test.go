// Package habitat_test proves the hybrid Habitat API end to end on the local
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok): the operator's manager, wired as cmd/main.go wires
// it with the repository's watches.yaml, runs in this process; kwok runs the
// supervisors' pods and gives them IPs, so the peer lists follow real pods.
package habitat_test

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// k8s is the admin client of the plane the suite runs on; cfg its config.
var (
	k8s client.Client
	cfg *rest.Config
)

func TestMain(m *testing.M) {
	o := suite.Options{InstallCRDs: true, Operator: &suite.Operator{Watches: true}}
	os.Exit(suite.Run(m, o, func(s *suite.Suite) error {
		k8s, cfg = s.Client, s.Config
		return nil
	}))
}
