package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// The kubectl plugin runs on a user's machine, against a cluster where the
// operator runs: it reads specs (releasespec, layerspec), never reconciles.
// A controller package in its dependencies would bring the controllers'
// caches, queues and flags into a CLI, and tie the plugin to how they are
// built. These are the prefixes none of its dependencies may have.
var notForThePlugin = []string{
	"github.com/kraan-io/kraan-operator/internal/controller/",
	"github.com/kraan-io/kraan-operator/internal/operator",
	"sigs.k8s.io/controller-runtime/pkg/manager",
	"sigs.k8s.io/controller-runtime/pkg/controller",
}

// TestPlugin_DependsOnNoController lists every package the plugin's binary
// is built from and fails for any controller package among them.
func TestPlugin_DependsOnNoController(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "./cmd/kubectl-kraan")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/kubectl-kraan: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("only %d dependencies listed; go list printed:\n%s", len(deps), out)
	}
	for _, dep := range deps {
		for _, prefix := range notForThePlugin {
			if strings.HasPrefix(dep, prefix) {
				t.Errorf("the kubectl plugin depends on %s: move what it needs into a leaf package (internal/outcome for error classes)", dep)
			}
		}
	}
}
