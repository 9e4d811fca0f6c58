// Package podsecurity_test proves on the local control plane (a real
// kube-apiserver, whose PodSecurity admission is on by default, with
// kube-controller-manager and kwok running the pods) that the operator's
// Deployment meets the restricted Pod Security Standard in every form it
// ships in: rendered by kustomize from config/default (what `make deploy`
// applies) and config/namespaced, rendered from the Helm chart in dist/chart,
// and embedded in the CSV of the OLM bundle. Each is created in a namespace
// labelled pod-security.kubernetes.io/enforce=restricted; a Pod made from its
// template is created with a server-side dry run, and any warning the API
// server returns fails the test. A second test loosens the Deployment the way
// a careless edit would and sees every one of these checks fail.
package podsecurity_test

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// k8s is the plane's admin client; cfg its configuration, from which the
// tests make clients that record the API server's warnings.
var (
	k8s client.Client
	cfg *rest.Config
)

// TestMain starts a bare plane: the Deployments need neither the operator's
// CRDs nor the operator, only admission and the controllers that roll them out.
func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, suite.Options{}, func(s *suite.Suite) error {
		k8s, cfg = s.Client, s.Config
		return nil
	}))
}
