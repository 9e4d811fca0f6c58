package guide

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const sample = "# Guide\n\n```sh\nmake demo\n```\n\n## Step by step\n\n" +
	"1. **Save**:\n\n   ```sh\n   kubectl get x > saved.yaml\n   ```\n\n" +
	"   ```yaml\n   kind: NotACommand\n   ```\n\n" +
	"2. **Name it**:\n\n   ```sh\n   NS=apps NAME=podinfo   # yours\n   ```\n\n" +
	"   ```sh\n   echo \"$NS/$NAME\"\n   ```\n\n## After\n\n```sh\nhelm history \"$RELEASE\"\n```\n"

func TestParse_BlocksWithTheirSectionAndStep(t *testing.T) {
	g := NewWithT(t)
	guide, err := Parse(sample)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(guide.Blocks).To(Equal([]Block{
		{Section: "Guide", Step: 0, Line: 3, Text: "make demo"},
		{Section: "Step by step", Step: 1, Line: 11, Text: "kubectl get x > saved.yaml"},
		{Section: "Step by step", Step: 2, Line: 21, Text: "NS=apps NAME=podinfo   # yours"},
		{Section: "Step by step", Step: 2, Line: 25, Text: "echo \"$NS/$NAME\""},
		{Section: "After", Step: 0, Line: 31, Text: "helm history \"$RELEASE\""},
	}))
	names, ok := guide.Blocks[2].Settings()
	g.Expect(ok).To(BeTrue())
	g.Expect(names).To(Equal([]string{"NS", "NAME"}))
	_, ok = guide.Blocks[3].Settings()
	g.Expect(ok).To(BeFalse())

	_, err = guide.Step("Step by step", 2)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = guide.Step("Step by step", 3)
	g.Expect(err).To(MatchError(ContainSubstring(`no shell block in step 3 of "Step by step"`)))
	g.Expect(guide.NotRun()).To(HaveLen(3))
}

func TestReadBlocks_KeepsTheLanguagesAsked(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "guide.md")
	g.Expect(os.WriteFile(path, []byte(sample), 0o600)).To(Succeed())
	blocks, err := ReadBlocks(path, "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(blocks).To(Equal([]Block{{Section: "Step by step", Step: 1, Line: 15, Text: "kind: NotACommand"}}))
}

func TestParse_AnUnclosedFenceIsAnError(t *testing.T) {
	_, err := Parse("1. x\n\n   ```sh\n   echo\n")
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("not closed")))
}

func TestShell_RunsBlocksAsOneTerminal(t *testing.T) {
	g := NewWithT(t)
	guide, err := Parse(sample)
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	sh := NewShell(dir)
	blocks, err := guide.Step("Step by step", 2)
	g.Expect(err).NotTo(HaveOccurred())

	// The settings block names variables the test must give.
	_, err = sh.Run(context.Background(), blocks...)
	g.Expect(err).To(MatchError(ContainSubstring("sets NS, which the test does not give")))

	sh.Set("NS", "kube-system", "NAME", "it's")
	out, err := sh.Run(context.Background(), blocks...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("kube-system/it's"))

	// A variable one block sets is there for the next; the test's win.
	first := Block{Text: "RELEASE=$(echo web)\nNS=changed-by-a-block", Line: 1}
	second := Block{Text: "echo \"$RELEASE in $NS\" > out.txt", Line: 2}
	_, err = sh.Run(context.Background(), first, second)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("web in kube-system\n"))

	// A failing command stops the run; an unset variable is a failure.
	_, err = sh.Run(context.Background(), Block{Text: "false\necho never", Line: 7})
	g.Expect(err).To(MatchError(ContainSubstring("block at line 7")))
	_, err = sh.Run(context.Background(), Block{Text: "echo \"$NOT_SET_ANYWHERE\"", Line: 8})
	g.Expect(err).To(HaveOccurred())
}

func TestShell_StandIns(t *testing.T) {
	g := NewWithT(t)
	sh := NewShell(t.TempDir())
	sh.StandIn("kubectl logs -n x deploy/y", "echo 'from the process log'")
	sh.StandIn("never used", "true")
	out, err := sh.Run(context.Background(), Block{Text: "kubectl logs -n x deploy/y | grep process", Line: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(out, "from the process log")).To(Equal(1))
	g.Expect(sh.UnusedStandIns()).To(Equal([]string{"never used"}))
}
