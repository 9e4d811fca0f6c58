package watches_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kraan-io/kraan-operator/internal/watches"
)

// chartDir is the repository's small test chart, as an absolute path.
func chartDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "charts", "small"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeWatches writes content as a watches file in a temporary directory.
func writeWatches(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "watches.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad_RepositoryWatchesFile(t *testing.T) {
	g := NewWithT(t)
	list, err := watches.Load(filepath.Join("..", "..", "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(1))
	g.Expect(list[0].GroupVersionKind()).To(Equal(schema.GroupVersionKind{Group: "habitat.kraan.io", Version: "v1alpha1", Kind: "Habitat"}))
	g.Expect(list[0].LoadedChart.Name()).To(Equal("habitat"))
	g.Expect(list[0].WatchesDependents()).To(BeTrue())
}

func TestLoad_FullEntry(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("TEST_IMAGE", "registry.example/app:1.2")
	path := writeWatches(t, `
- group: test.kraan.io
  version: v1
  kind: Widget
  chart: `+chartDir(t)+`
  watchDependentResources: false
  overrideValues:
    image.repository: $TEST_IMAGE
    replicaCount: "2"
  reconcilePeriod: 90s
  maxConcurrentReconciles: 3
  selector:
    matchLabels: {shard: a}
`)
	list, err := watches.Load(path)
	g.Expect(err).NotTo(HaveOccurred())
	w := list[0]
	g.Expect(w.WatchesDependents()).To(BeFalse())
	g.Expect(w.ResyncPeriod()).To(Equal(90 * time.Second))
	g.Expect(w.Workers(1)).To(Equal(3))
	g.Expect(w.LabelSelector.Matches(labels.Set{"shard": "a"})).To(BeTrue())
	g.Expect(w.LabelSelector.Matches(labels.Set{"shard": "b"})).To(BeFalse())

	spec := map[string]any{"replicaCount": int64(1), "image": map[string]any{"tag": "x"}}
	values, err := w.Values(spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(values).To(Equal(map[string]any{
		"replicaCount": int64(2),
		"image":        map[string]any{"tag": "x", "repository": "registry.example/app:1.2"},
	}))
	g.Expect(spec["replicaCount"]).To(Equal(int64(1)), "the object's spec must not change")
}

func TestLoad_Defaults(t *testing.T) {
	g := NewWithT(t)
	list, err := watches.Load(writeWatches(t, "- {version: v1, kind: Widget, chart: "+chartDir(t)+"}\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list[0].WatchesDependents()).To(BeTrue())
	g.Expect(list[0].ResyncPeriod()).To(BeZero())
	g.Expect(list[0].Workers(4)).To(Equal(4))
	g.Expect(list[0].LabelSelector.Empty()).To(BeTrue())
}

func TestLoad_RelativeChartResolvesAgainstWatchesFile(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.Symlink(chartDir(t), filepath.Join(dir, "mychart"))).To(Succeed())
	path := filepath.Join(dir, "watches.yaml")
	g.Expect(os.WriteFile(path, []byte("- {version: v1, kind: Widget, chart: mychart}\n"), 0o600)).To(Succeed())
	list, err := watches.Load(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list[0].Chart).To(Equal(filepath.Join(dir, "mychart")))
}

func TestLoad_InvalidEntries(t *testing.T) {
	tests := []struct {
		name    string
		entries string
		want    []string
	}{
		{
			name:    "missing version and kind",
			entries: "- {group: a.io, chart: CHART}\n",
			want:    []string{"entry 1", "version is required", "kind is required"},
		},
		{
			name:    "missing chart",
			entries: "- {version: v1, kind: Widget}\n",
			want:    []string{"entry 1 (/v1, Kind=Widget)", "chart is required"},
		},
		{
			name:    "chart not found",
			entries: "- {version: v1, kind: Widget, chart: /nonexistent/chart}\n",
			want:    []string{"entry 1", "loading chart /nonexistent/chart"},
		},
		{
			name:    "duplicate kind",
			entries: "- {group: a.io, version: v1, kind: Widget, chart: CHART}\n- {group: a.io, version: v1, kind: Widget, chart: CHART}\n",
			want:    []string{"entry 2 (a.io/v1, Kind=Widget): duplicate of entry 1"},
		},
		{
			name:    "bad numbers",
			entries: "- {version: v1, kind: Widget, chart: CHART, reconcilePeriod: -1m, maxConcurrentReconciles: 0}\n",
			want:    []string{"reconcilePeriod -1m0s is negative", "maxConcurrentReconciles 0 is below 1"},
		},
		{
			name:    "bad selector",
			entries: "- {version: v1, kind: Widget, chart: CHART, selector: {matchExpressions: [{key: a, operator: Nope}]}}\n",
			want:    []string{"entry 1", "selector"},
		},
		{
			name:    "bad override",
			entries: "- {version: v1, kind: Widget, chart: CHART, overrideValues: {'a[': x}}\n",
			want:    []string{"entry 1", "overrideValues a["},
		},
		{
			name:    "unknown key",
			entries: "- {version: v1, kind: Widget, chart: CHART, watchDependentResource: false}\n",
			want:    []string{"watchDependentResource"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			content := strings.ReplaceAll(tt.entries, "CHART", chartDir(t))
			_, err := watches.Load(writeWatches(t, content))
			g.Expect(err).To(HaveOccurred())
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

func TestLoad_MissingFile(t *testing.T) {
	g := NewWithT(t)
	_, err := watches.Load(filepath.Join(t.TempDir(), "watches.yaml"))
	g.Expect(err).To(MatchError(ContainSubstring("reading watches file")))
}

func TestLoad_ConfinementFields(t *testing.T) {
	g := NewWithT(t)
	path := writeWatches(t, `
- group: test.kraan.io
  version: v1
  kind: Widget
  chart: `+chartDir(t)+`
  serviceAccountName: widget-deployer
  allowClusterScoped: true
  allowedKinds:
    - kind: ConfigMap
    - {group: apps, kind: StatefulSet}
`)
	list, err := watches.Load(path)
	g.Expect(err).NotTo(HaveOccurred())
	w := list[0]
	g.Expect(w.ServiceAccount("fallback")).To(Equal("widget-deployer"))
	g.Expect(w.Kinds).To(Equal([]schema.GroupKind{{Kind: "ConfigMap"}, {Group: "apps", Kind: "StatefulSet"}}))
	b := w.Bounds("shop", "one")
	g.Expect(b.Owner).To(Equal("Widget shop/one"))
	g.Expect(b.Namespace).To(Equal("shop"))
	g.Expect(b.ClusterScoped).To(BeTrue())
	g.Expect(b.Kinds).To(Equal(w.Kinds))
}

func TestLoad_ConfinementDefaults_KindsFromTheChart(t *testing.T) {
	g := NewWithT(t)
	list, err := watches.Load(writeWatches(t, "- version: v1\n  kind: Widget\n  chart: "+chartDir(t)+"\n"))
	g.Expect(err).NotTo(HaveOccurred())
	w := list[0]
	g.Expect(w.ServiceAccount("")).To(BeEmpty())
	g.Expect(w.ServiceAccount("tenant")).To(Equal("tenant"))
	g.Expect(w.AllowClusterScoped).To(BeFalse())
	g.Expect(w.Kinds).To(ConsistOf(
		schema.GroupKind{Kind: "ConfigMap"}, schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Kind: "Service"}))
}

func TestLoad_ConfinementFields_Invalid(t *testing.T) {
	g := NewWithT(t)
	empty := filepath.Join(t.TempDir(), "empty")
	g.Expect(os.MkdirAll(filepath.Join(empty, "templates"), 0o700)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(empty, "Chart.yaml"), []byte("apiVersion: v2\nname: empty\nversion: 0.1.0\n"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(empty, "templates", "any.yaml"), []byte("{{ toYaml .Values.objects }}\n"), 0o600)).To(Succeed())
	_, err := watches.Load(writeWatches(t, `
- version: v1
  kind: Widget
  chart: `+chartDir(t)+`
  serviceAccountName: Not_A_Name
  allowedKinds: [{group: apps}]
- version: v1
  kind: Templated
  chart: `+empty+`
`))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`entry 1 (/v1, Kind=Widget): serviceAccountName "Not_A_Name"`))
	g.Expect(err.Error()).To(ContainSubstring("allowedKinds[0]: kind is required"))
	g.Expect(err.Error()).To(ContainSubstring("entry 2 (/v1, Kind=Templated): chart " + empty + " declares no kind"))
}
