package helmcharts_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// templateAction is one {{ … }} of a template.
var templateAction = regexp.MustCompile(`{{-?\s*(.*?)\s*-?}}`)

// controlAction starts an action that prints nothing: control flow,
// variables, comments and definitions.
var controlAction = regexp.MustCompile(`^(if|else|end|with|range|define|/\*|\$[A-Za-z_]+\s*:=)`)

// safeOutput ends an action whose output cannot leave its YAML scalar or
// block: quoted, an integer, or YAML indented under its key.
var safeOutput = regexp.MustCompile(`\|\s*(quote|int|nindent\s+[0-9]+)$`)

// TestHabitatChart_Templates_QuoteEveryValue fails on any template action of
// the Habitat chart that prints a value without quoting it: a spec field
// printed bare is a YAML injection (a newline and a document of its own).
// Helpers (_*.tpl) are checked where they are included.
func TestHabitatChart_Templates_QuoteEveryValue(t *testing.T) {
	g := NewWithT(t)
	files, err := filepath.Glob(filepath.Join("habitat", "templates", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	var bare []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range templateAction.FindAllStringSubmatch(line, -1) {
				if !controlAction.MatchString(m[1]) && !safeOutput.MatchString(m[1]) {
					bare = append(bare, filepath.Base(f)+":"+strconv.Itoa(i+1)+": "+m[0])
				}
			}
		}
	}
	g.Expect(bare).To(BeEmpty(), "template actions that print a value unquoted")
}

// injection is the attack of issue #26: a mountPath that closes the
// StatefulSet and starts a ClusterRoleBinding to cluster-admin.
const injection = "/data\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n" +
	"metadata:\n  name: pwned\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n" +
	"subjects:\n  - kind: ServiceAccount\n    name: default\n    namespace: shop\n"

// injectionTail swallows the rest of the StatefulSet template into a
// ConfigMap's block scalar, so that the injected stream stays valid YAML.
const injectionTail = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tail\ndata:\n  x: |2\n"

// renderWithoutSchema renders the chart as renderHabitat does but skips
// values.schema.json: what the templates do with values the CRD and the
// schema would both refuse.
func renderWithoutSchema(t *testing.T, values map[string]any) []string {
	t.Helper()
	chrt, err := loader.Load("habitat")
	if err != nil {
		t.Fatal(err)
	}
	chrt.Schema = nil
	install := action.NewInstall(&action.Configuration{})
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace = "web", "shop"
	install.KubeVersion = &common.KubeVersion{Version: "v1.35.0", Major: "1", Minor: "35"}
	rel, err := install.Run(chrt, values)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, doc := range releaseutil.SplitManifests(rel.(*release.Release).Manifest) {
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "kind: ") {
				kinds = append(kinds, strings.TrimPrefix(line, "kind: "))
			}
		}
	}
	return kinds
}

func TestHabitatChart_Render_InjectedValuesStayStrings(t *testing.T) {
	g := NewWithT(t)
	values := habitatValues(map[string]any{
		"channel": "stable\n---\nkind: Secret", "configSecretName": "cfg\nkind: Secret",
		"ringSecretName": "ring-20260101000000\n---\nkind: Secret",
	}, map[string]any{"persistentStorage": map[string]any{
		"size": "1Gi", "mountPath": injection + injectionTail, "storageClassName": "fast\n---\nkind: Secret",
	}})
	g.Expect(renderWithoutSchema(t, values)).To(ConsistOf("Service", "StatefulSet"))

	// The schema refuses the same values before anything is rendered.
	_, err := renderHabitat(t, values)
	g.Expect(err).To(MatchError(ContainSubstring("mountPath")))
}
