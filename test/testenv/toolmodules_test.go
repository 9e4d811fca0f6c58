package testenv_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/mod/modfile"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// sharingToolModules are the tool modules a first `make demo` builds one
// after the other. A package compiles once for both only when it and every
// package beneath it are the same version in both (and the build flags are
// the same: the Makefile's build-tools), so the modules they share are kept
// at one version.
var sharingToolModules = []string{"hack/tools/kube", "hack/tools/source-controller"}

// TestToolModules_ShareOneVersionOfEachModule: a module both control-plane
// tool modules use is required at the same version by both (after their
// replace directives). A bump in one that leaves the other behind compiles
// that module, and all that depends on it, twice on every first run.
func TestToolModules_ShareOneVersionOfEachModule(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	versions := make([]map[string]string, len(sharingToolModules))
	for i, dir := range sharingToolModules {
		versions[i] = effectiveVersions(parseGoMod(t, filepath.Join(root, dir, "go.mod")))
	}
	var differ []string
	for mod, v := range versions[0] {
		if w, ok := versions[1][mod]; ok && w != v {
			differ = append(differ, mod+": "+v+" in "+sharingToolModules[0]+", "+w+" in "+sharingToolModules[1])
		}
	}
	sort.Strings(differ)
	g.Expect(differ).To(BeEmpty(), "require the higher version in both modules (go get mod@version in each, then go mod tidy)")
	g.Expect(len(versions[0]) > 0 && len(versions[1]) > 0).To(BeTrue(), "both go.mod files require modules")
}

// parseGoMod reads and parses a go.mod file.
func parseGoMod(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	f, err := modfile.Parse(path, data, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return f
}

// effectiveVersions is each module a go.mod requires, at the version its
// replace directives (to another version, not a directory) make it; a module
// replaced by another is that module@version.
func effectiveVersions(f *modfile.File) map[string]string {
	versions := map[string]string{}
	for _, r := range f.Require {
		versions[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if r.New.Version == "" || r.Old.Version != "" && versions[r.Old.Path] != r.Old.Version {
			continue // a directory, or a replacement of another version
		}
		versions[r.Old.Path] = r.New.Version
		if r.New.Path != r.Old.Path {
			versions[r.Old.Path] = r.New.Path + "@" + r.New.Version
		}
	}
	return versions
}
