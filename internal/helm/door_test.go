package helm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// helmModule is the Helm SDK; a move to another major version must touch
// this package alone.
const helmModule = "helm.sh/helm/"

// testSupport are the packages that stand in for Helm's own tools in tests
// (a chart repository, `helm template`): they use the SDK as an independent
// peer, the way the e2e tests use a real source-controller, so that a test
// never checks the engine against the engine.
var testSupport = []string{
	"github.com/kraan-io/kraan-operator/test/",
}

// TestHelmSDK_IsImportedOnlyByInternalHelm lists the non-test imports of every
// package of the module and fails for any package outside internal/helm (and
// the test-support packages) that imports the Helm SDK.
func TestHelmSDK_IsImportedOnlyByInternalHelm(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	checked := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		if allowedToImportHelm(pkg) {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, helmModule) {
				t.Errorf("%s imports %s: use internal/helm instead (docs/development.md)", pkg, imp)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked; go list printed:\n%s", checked, out)
	}
}

func allowedToImportHelm(pkg string) bool {
	if pkg == "github.com/kraan-io/kraan-operator/internal/helm" || strings.HasPrefix(pkg, "github.com/kraan-io/kraan-operator/internal/helm/") {
		return true
	}
	for _, prefix := range testSupport {
		if strings.HasPrefix(pkg, prefix) {
			return true
		}
	}
	return false
}

// kindTypes are the API types of the operator's kinds: the engine takes
// requests in its own terms (Request, Actions), so a new kind or a new
// field of one never reaches into it.
var kindTypes = map[string]bool{
	"HelmRelease": true, "HelmReleaseSpec": true, "HelmReleaseStatus": true,
	"AddonsLayer": true, "AddonsLayerSpec": true, "AddonsLayerStatus": true,
}

// TestEngine_SpeaksNoKindsAPI parses the engine's files (tests aside) and
// fails on any use of a kind's API type.
func TestEngine_SpeaksNoKindsAPI(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "internal", "helm", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	parsed := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && kindTypes[sel.Sel.Name] {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "kraanv1" {
					t.Errorf("%s uses kraanv1.%s: the engine's requests are helm.Request and helm.Actions, built by each controller",
						filepath.Base(path), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if parsed < 10 {
		t.Fatalf("parsed %d files of internal/helm: the glob found too few", parsed)
	}
}
