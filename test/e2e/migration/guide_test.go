package migration_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/test/guide"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// guideRun is a guide of docs/ and the shell its blocks run in: kubectl,
// the Helm CLI and kubectl-kraan on PATH, the plane's kubeconfig, and a
// directory of its own for the files the guide writes.
type guideRun struct {
	doc *guide.Guide
	sh  *guide.Shell
}

// openGuide reads docs/<name>. When the test passes, every shell block of
// the guide must have run and every stand-in must have been needed: a block
// added to the guide is a block this test runs.
func openGuide(t *testing.T, name string) *guideRun {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	doc, err := guide.Read(filepath.Join(root, "docs", name))
	g.Expect(err).NotTo(HaveOccurred())
	path := strings.Join([]string{os.Getenv("KUBEBUILDER_ASSETS"), filepath.Dir(os.Getenv("KRAAN_HELM_CLI")),
		filepath.Dir(pluginBinary), os.Getenv("PATH")}, string(os.PathListSeparator))
	r := &guideRun{doc: doc, sh: guide.NewShell(t.TempDir(), "KUBECONFIG="+kubeconfig, "PATH="+path)}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		for _, b := range r.doc.NotRun() {
			t.Errorf("%s: the block at %s never ran:\n%s", name, b, b.Text)
		}
		for _, c := range r.sh.UnusedStandIns() {
			t.Errorf("%s: no block runs %q any more; drop its stand-in", name, c)
		}
	})
	return r
}

// run runs the blocks of the steps of section, in order, and returns what
// they printed; a failing block fails the test.
func (r *guideRun) run(t *testing.T, section string, steps ...int) string {
	t.Helper()
	var blocks []guide.Block
	for _, n := range steps {
		b, err := r.doc.Step(section, n)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		blocks = append(blocks, b...)
	}
	out, err := r.sh.Run(t.Context(), blocks...)
	t.Logf("%s, %q, steps %v:\n%s", filepath.Base(r.doc.Path), section, steps, out)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return out
}
