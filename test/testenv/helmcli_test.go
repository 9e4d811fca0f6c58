package testenv_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestHelmCLI_IsTheOperatorsHelm: the break-glass tests run the Helm CLI
// built from hack/tools/helm as the admin's tool; it must be the Helm
// version the operator embeds (go.mod), or they test another Helm.
func TestHelmCLI_IsTheOperatorsHelm(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	version := func(path string) string {
		data, err := os.ReadFile(filepath.Join(root, path))
		g.Expect(err).NotTo(HaveOccurred())
		m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?helm\.sh/helm/v4 (v\S+)`).FindSubmatch(data)
		g.Expect(m).NotTo(BeNil(), "%s requires no helm.sh/helm/v4", path)
		return string(m[1])
	}
	g.Expect(version("hack/tools/helm/go.mod")).To(Equal(version("go.mod")))
}
