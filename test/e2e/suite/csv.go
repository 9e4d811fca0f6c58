package suite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// CSVArgs are the operator container's arguments in the bundle's CSV: how
// OLM starts the operator, and so how the tests of shipped behaviour start
// it.
func CSVArgs(t *testing.T) []string {
	t.Helper()
	g := gomega.NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", "kraan-operator.clusterserviceversion.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Expect(yaml.Unmarshal(data, csv)).To(gomega.Succeed())
	specs := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	g.Expect(specs).To(gomega.HaveLen(1))
	containers := specs[0].Spec.Template.Spec.Containers
	g.Expect(containers).NotTo(gomega.BeEmpty())
	return containers[0].Args
}
