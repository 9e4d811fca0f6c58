package testenv_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// lateTools are the variables the Makefile exports for the tools make test
// builds while the other packages' tests run (LATE_TOOLS); a package reads one
// by its quoted name. (One string, so that this file does not name them so.)
var lateTools = strings.Fields("KRAAN_HELM_CONTROLLER KRAAN_OLM KRAAN_OLM_CATALOG KRAAN_OPM")

// TestLatePackages_RunTheLateTools: the Makefile's LATE_PACKAGES are exactly
// the packages that run a late tool. One missing would be tested before its
// tool is built and fail; one too many would wait for nothing.
func TestLatePackages_RunTheLateTools(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^LATE_PACKAGES = (.+)$`).FindSubmatch(makefile)
	g.Expect(m).NotTo(BeNil(), "the Makefile defines LATE_PACKAGES")
	declared := strings.Fields(string(m[1]))

	var running []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "hack/tools" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, v := range lateTools {
			if strings.Contains(string(src), `"`+v+`"`) {
				running = append(running, "./"+filepath.Dir(rel))
				break
			}
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	slices.Sort(running)
	g.Expect(slices.Compact(running)).To(ConsistOf(declared))
}
