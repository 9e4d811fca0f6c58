package watches_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/watches"
)

// writeFuzzWatches writes content as dir/watches.yaml beside the smallest
// chart Load accepts, dir/chart (one template declaring one kind), and
// returns the file's path.
func writeFuzzWatches(tb testing.TB, dir string, content []byte) string {
	tb.Helper()
	chart := []byte("apiVersion: v2\nname: fuzz\nversion: 0.1.0\n")
	template := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name | quote }}\n")
	path := filepath.Join(dir, "watches.yaml")
	if err := os.MkdirAll(filepath.Join(dir, "chart", "templates"), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart", "Chart.yaml"), chart, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart", "templates", "cm.yaml"), template, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, content, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// FuzzLoad feeds arbitrary watches files to Load. It proves that loading
// never panics and that every entry of a file it accepts has its chart and
// selector loaded and gives values for an empty spec without panicking.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"- version: v1\n  kind: Widget\n  chart: chart\n",
		"- group: test.kraan.io\n  version: v1\n  kind: Widget\n  chart: chart\n  watchDependentResources: false\n" +
			"  overrideValues:\n    image.repository: $HOME\n    list[1].x: \"2\"\n  reconcilePeriod: 90s\n" +
			"  maxConcurrentReconciles: 3\n  selector:\n    matchLabels:\n      tier: web\n",
		"- version: v1\n  kind: Widget\n  chart: chart\n- version: v1\n  kind: Widget\n  chart: chart\n",
		"- version: v1\n  kind: Widget\n  chart: chart\n  overrideValues:\n    a[: b\n",
		"- kind: Widget\n  chart: missing\n  reconcilePeriod: -1s\n  maxConcurrentReconciles: 0\n",
		"- version: v1\n  kind: Widget\n  chart: chart\n  watchDependentResource: true\n",
		"- version: v1\n  kind: Widget\n  chart: chart\n  serviceAccountName: tenant\n  allowClusterScoped: true\n" +
			"  allowedKinds:\n    - kind: ConfigMap\n    - {group: apps, kind: Deployment}\n    - {group: \"*\", kind: Gadget}\n",
		"- version: v1\n  kind: Widget\n  chart: chart\n  serviceAccountName: Not_A_Name\n  allowedKinds: [{group: apps}]\n",
		"{}", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Charts are read from disk: keep them inside the test's directory
		// so that no input makes Load read "/" as a chart. Load parses the
		// file strictly, so it sees the charts this lenient parse sees.
		var entries []watches.Watch
		if yaml.Unmarshal(bytes.TrimSpace(data), &entries) == nil {
			for _, w := range entries {
				if w.Chart != "" && !filepath.IsLocal(w.Chart) {
					t.Skip("chart outside the test directory")
				}
			}
		}
		list, err := watches.Load(writeFuzzWatches(t, t.TempDir(), data))
		if err != nil {
			return
		}
		for _, w := range list {
			if w.LoadedChart == nil || w.LabelSelector == nil || len(w.Kinds) == 0 {
				t.Fatalf("%s: accepted without its chart, selector or allowed kinds loaded", &w)
			}
			if b := w.Bounds("ns", "name"); b.Namespace != "ns" || len(b.Kinds) == 0 {
				t.Fatalf("%s: bounds %+v do not confine to the object's namespace", &w, b)
			}
			_, _ = w.Values(nil)
		}
	})
}

// FuzzValues feeds arbitrary JSON specs to Watch.Values with overrides of
// every `--set` shape (nested key, list index, nested list). It proves that
// applying overrides never panics, whatever the spec holds at their paths,
// and never writes into the spec it was given.
func FuzzValues(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"replicaCount": 1, "image": {"repository": "nginx", "tag": "1.27"}, "tolerations": []}`,
		`{"image": "nginx", "tolerations": "none", "nested": {"list": {"a": 1}}}`,
		`{"tolerations": [null, 2, {"key": "a"}], "nested": {"list": [[1], "x"]}}`,
		`{"replicaCount": {"a": [1.5, true, null]}}`,
	} {
		f.Add([]byte(seed))
	}
	list, err := watches.Load(writeFuzzWatches(f, f.TempDir(), []byte(`
- version: v1
  kind: Widget
  chart: chart
  overrideValues:
    image.repository: registry.example/app
    replicaCount: "2"
    tolerations[0].key: dedicated
    nested.list[1][0]: x
`)))
	if err != nil {
		f.Fatal(err)
	}
	w := list[0]
	f.Fuzz(func(t *testing.T, data []byte) {
		var spec, original map[string]any
		if json.Unmarshal(data, &spec) != nil || json.Unmarshal(data, &original) != nil {
			t.Skip("not a JSON object")
		}
		_, _ = w.Values(spec)
		if !reflect.DeepEqual(spec, original) {
			t.Fatalf("Values changed the spec: %v, was %v", spec, original)
		}
	})
}
