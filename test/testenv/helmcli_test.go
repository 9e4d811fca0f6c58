package testenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^\s*helm\.sh/helm/v4 (v\S+)`).FindSubmatch(goMod)
	g.Expect(m).NotTo(BeNil(), "go.mod requires no helm.sh/helm/v4")
	g.Expect(string(goMod)).To(ContainSubstring("\ntool helm.sh/helm/v4/cmd/helm\n"),
		"go.mod has no tool directive for the Helm CLI: make builds it from the operator's module")

	out, err := exec.CommandContext(t.Context(), bin, "version", "--template", "{{.Version}}").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(strings.TrimSpace(string(out))).To(Equal(string(m[1])))
}
