package testenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestHelmCLI_IsTheOperatorsHelm: the break-glass tests run the Helm CLI
// ($KRAAN_HELM_CLI) as the admin's tool; it must be the Helm the operator
// embeds (go.mod), or they test another Helm. make builds it from the
// operator's own module (go.mod's tool directive), so the two cannot drift;
// this runs the binary and asks it.
func TestHelmCLI_IsTheOperatorsHelm(t *testing.T) {
	g := NewWithT(t)
	bin := os.Getenv("KRAAN_HELM_CLI")
	g.Expect(bin).NotTo(BeEmpty(), "KRAAN_HELM_CLI is not set: run the tests with `make test`, which builds the Helm CLI and sets it")

	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	goMod := parseGoMod(t, filepath.Join(root, "go.mod"))
	g.Expect(goMod.Tool).To(ContainElement(HaveField("Path", "helm.sh/helm/v4/cmd/helm")),
		"go.mod has no tool directive for the Helm CLI: make builds it from the operator's module")
	version := effectiveVersions(goMod)["helm.sh/helm/v4"]
	g.Expect(version).NotTo(BeEmpty(), "go.mod requires no helm.sh/helm/v4")

	out, err := exec.CommandContext(t.Context(), bin, "version", "--template", "{{.Version}}").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(strings.TrimSpace(string(out))).To(Equal(version))
}
