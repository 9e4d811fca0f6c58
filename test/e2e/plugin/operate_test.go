package plugin_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

func testSuspendResumeLayerSetsHold(t *testing.T) {
	g := NewWithT(t)
	r := kraan(t, "suspend", "layer", "top")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(r.stdout).To(Equal("✔ AddonsLayer top suspended\n"))
	g.Expect(layerOf(t, "top").Spec.Hold).To(BeTrue())
	r = kraan(t, "resume", "layer", "top")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(layerOf(t, "top").Spec.Hold).To(BeFalse())
	g.Expect(waitDeployed(t.Context(), "top")).To(Succeed())
}

func testReconcileLayerWaitsUntilDeployed(t *testing.T) {
	g := NewWithT(t)
	r := kraan(t, "reconcile", "layer", "base")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(r.stdout).To(Equal("✔ AddonsLayer base is Deployed\n"))
	g.Expect(r.stderr).To(ContainSubstring("► asked for a reconcile of AddonsLayer base"))
	g.Expect(layerOf(t, "base").Annotations).To(HaveKey("reconcile.fluxcd.io/requestedAt"))
}

func testEventsLayerMergesTheLayersAndItsObjectsEvents(t *testing.T) {
	g := NewWithT(t)
	r := kraan(t, "events", "layer", "base")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	g.Expect(lines[0]).To(MatchRegexp(`^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`))
	g.Expect(r.stdout).To(MatchRegexp(`AddonsLayer/base\s`), "the layer's own events")
	g.Expect(r.stdout).To(MatchRegexp(`HelmRelease/plug/app\s`), "the events of the release it applied")

	r = kraan(t, "events", "helmrelease", "-n", ns, releaseName)
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(r.stdout).To(MatchRegexp(`Normal\s+InstallSucceeded\s+HelmRelease/plug/app\s`))
	g.Expect(r.stdout).NotTo(ContainSubstring("AddonsLayer/"), "only the release's own events and its objects'")
}

// TestBinary builds cmd/kubectl-kraan (with the test build's cgo setting,
// which shares its build cache; `make plugin` links it statically) and runs it as
// kubectl would: kubectl's flags, exit codes, one-line errors.
func testBinary(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	bin := filepath.Join(t.TempDir(), "kubectl-kraan")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/kubectl-kraan")
	build.Dir = root
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))

	run := func(args ...string) (int, string, string) {
		cmd := exec.CommandContext(context.Background(), bin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run("--kubeconfig", e.Kubeconfig, "get", "hr", "--namespace", ns)
	g.Expect(code).To(Equal(0), stderr)
	g.Expect(stdout).To(MatchRegexp(`(?m)^app\s+diffy\s`))
	code, _, stderr = run("--kubeconfig", e.Kubeconfig, "--context", "nope", "get", "layers")
	g.Expect(code).To(Equal(plugin.ExitError))
	g.Expect(stderr).To(HavePrefix("Error: "))
	g.Expect(strings.Count(stderr, "\n")).To(Equal(1), stderr)
	code, stdout, stderr = run("--kubeconfig", e.Kubeconfig, "diff", "layer", "base")
	g.Expect(code).To(Equal(plugin.ExitOK), stdout+stderr)
	code, _, _ = run("--help")
	g.Expect(code).To(Equal(0))
}
