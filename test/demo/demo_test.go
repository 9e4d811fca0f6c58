package demo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kraan-io/kraan-operator/test/env"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// buildDemo builds hack/demo once, so that both runs measure the demo and
// not the compiler.
func buildDemo(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./hack/demo")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hack/demo: %v\n%s", err, out)
	}
	return bin
}

// workDir is the demo's temporary directory, from its first line.
var workDir = regexp.MustCompile(`working directory (\S+)`)

// habitatRunning is the demo's line for the apps layer's Habitat once its
// release is deployed, both supervisors of its StatefulSet run on the local
// plane's kwok node and the peer list holds their two IPs.
var habitatRunning = regexp.MustCompile(`Habitat apps/sessions is Ready: StatefulSet 2/2, supervisors Running on kwok-node-0, peer list [0-9.]+, [0-9.]+\.`)

// TestDemo_ReachesDeployedTwice runs the demo non-interactively twice in a
// row: every layer Deployed, every release Ready and the Habitat's
// supervisors running, both times. The second run proves the first left
// nothing running that gets in the way (ports, processes, files).
func TestDemo_ReachesDeployedTwice(t *testing.T) {
	if _, err := env.OptionsFromEnv(""); err != nil {
		t.Fatalf("%v", err) // fail, never skip: `make test` sets them
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildDemo(t, root)
	for run := 1; run <= 2; run++ {
		out := runDemo(t, root, bin)
		for _, want := range []string{
			"Everything is Deployed and Ready at version 0.1.0",
			"Everything is Deployed and Ready at version 0.2.0",
			"monitoring/logging moved from mgmt to base and was upgraded in place",
			"Rollout order (Deployed at): bootstrap",
			"export KUBECONFIG=",
			" kraan graph -o svg > layers.svg", // how to try the kubectl plugin
		} {
			if !strings.Contains(out, want) {
				t.Fatalf("run %d: output lacks %q:\n%s", run, want, out)
			}
		}
		if !habitatRunning.MatchString(out) {
			t.Fatalf("run %d: output does not show the apps layer's Habitat Ready with its supervisors Running on kwok (%s):\n%s",
				run, habitatRunning, out)
		}
		m := workDir.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("run %d: output names no working directory:\n%s", run, out)
		}
		if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
			t.Fatalf("run %d: working directory %s left behind (stat: %v)", run, m[1], err)
		}
	}
}

// runDemo runs the demo with --non-interactive and fails the test unless it
// exits with status 0; it returns the output.
func runDemo(t *testing.T, root, bin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "--non-interactive")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo --non-interactive: %v\n%s", err, out)
	}
	t.Logf("demo ran in %s", time.Since(start).Round(time.Second))
	return string(out)
}
