// Package helm3defaults_test proves the UseHelm3Defaults feature gate on the
// local control plane: the operator's manager runs in this process as
// --feature-gates=UseHelm3Defaults=true starts it, so HelmReleases that leave
// Flux v1.6's new fields unset get Helm 3's behaviour, while a field set in
// the spec still wins over the gate. The default behaviour (gate off) is
// proven by test/e2e/helmreleases.
package helm3defaults_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// k8s is the admin client of the plane the suite runs on.
var k8s client.Client

func TestMain(m *testing.M) {
	o := suite.Options{InstallCRDs: true, Operator: &suite.Operator{HelmDefaults: defaults.Defaults{UseHelm3: true}}}
	os.Exit(suite.Run(m, o, func(s *suite.Suite) error {
		k8s = s.Client
		return nil
	}))
}
