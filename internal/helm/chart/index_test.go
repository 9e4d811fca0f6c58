package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// helmIndex parses an index the way the operator did before indexes were
// read in batches: Helm's strict parser over the whole document, entries
// that fail validation dropped, newest first. It is the reference the
// batched reader must agree with.
func helmIndex(t *testing.T, data []byte) map[string][]indexVersion {
	t.Helper()
	var idx repo.IndexFile
	if err := yaml.UnmarshalStrict(data, &idx); err != nil {
		t.Fatalf("reference parse: %v", err)
	}
	out := map[string][]indexVersion{}
	for name, versions := range idx.Entries {
		out[name] = nil
		valid := repo.ChartVersions{}
		for _, cv := range versions {
			if cv == nil || cv.Metadata == nil {
				continue
			}
			if cv.APIVersion == "" {
				cv.APIVersion = helmchart.APIVersionV1
			}
			if cv.Validate() == nil {
				valid = append(valid, cv)
			}
		}
		sort.Stable(sort.Reverse(valid))
		for _, cv := range valid {
			v := indexVersion{Version: cv.Version, Digest: cv.Digest}
			if len(cv.URLs) > 0 {
				v.URL = cv.URLs[0]
			}
			out[name] = append(out[name], v)
		}
	}
	return out
}

// realisticIndex is an index as `helm repo index` writes it, with every
// field Helm knows filled in: long descriptions goyaml folds over lines,
// block scalars, maintainers, dependencies, annotations, several URLs.
func realisticIndex(t testing.TB, charts, versions int) []byte {
	t.Helper()
	idx := repo.NewIndexFile()
	for c := range charts {
		name := fmt.Sprintf("chart-%d", c)
		for v := range versions {
			md := &helmchart.Metadata{
				APIVersion: helmchart.APIVersionV2, Name: name, Version: fmt.Sprintf("%d.%d.0", v/10, v%10),
				AppVersion: "1.2.3", Type: "application", KubeVersion: ">=1.25.0-0",
				Description: "A chart whose description is long enough that goyaml folds it over several lines, " +
					"as the descriptions of real charts are: " + strings.Repeat("words: and more words # not a comment ", 4),
				Home: "https://example.com/" + name, Icon: "https://example.com/icon.png",
				Sources:     []string{"https://github.com/example/" + name},
				Keywords:    []string{"a", "b", "- not an item", "key: not a key"},
				Maintainers: []*helmchart.Maintainer{{Name: "Jane", Email: "jane@example.com"}, {Name: "Joe"}},
				Annotations: map[string]string{
					"artifacthub.io/changes": "- kind: added\n  description: multi-line\n- kind: fixed\n  description: \"quoted\"\n",
					"category":               "Database",
				},
				Dependencies: []*helmchart.Dependency{{Name: "common", Version: "2.x.x", Repository: "oci://registry/charts", Tags: []string{"x"}}},
			}
			if err := idx.MustAdd(md, fmt.Sprintf("%s-%s.tgz", name, md.Version), "https://charts.example.com/"+name,
				fmt.Sprintf("%064x", c*1000+v)); err != nil {
				t.Fatal(err)
			}
			cv := idx.Entries[name][len(idx.Entries[name])-1]
			cv.URLs = append(cv.URLs, "https://mirror.example.com/"+name+".tgz")
			cv.Created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		}
	}
	idx.Generated = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data, err := yaml.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readsInBatches reports whether the batched reader walks data without
// falling back to parsing it whole.
func readsInBatches(data []byte) error {
	return (&yamlIndexReader{s: lineScanner{data: data, num: 1}, b: newIndexBuilder()}).read()
}

func TestParseIndex_agreesWithHelm(t *testing.T) {
	tests := []struct {
		name string
		data string
		// generic: the layout is not the one walked; the index is parsed whole.
		generic bool
	}{
		{name: "as helm repo index writes it", data: string(realisticIndex(t, 3, 12))},
		{name: "sequences indented past their key, CRLF, BOM, comments, document start",
			data: "\uFEFF# a comment\r\n---\r\napiVersion: v1 # trailing\r\nentries:\r\n    app:\r\n        - name: app\r\n" +
				"          version: 1.0.0\r\n          # comment\r\n          keywords:\r\n              - a\r\n\r\n" +
				"          apiVersion: v2\r\n          urls:\r\n              - app-1.0.0.tgz\r\n        - name: app\r\n" +
				"          version: 2.0.0\r\n          apiVersion: v2\r\n          urls: [app-2.0.0.tgz, mirror.tgz]\r\n" +
				"generated: \"2026-01-01T00:00:00Z\"\r\n"},
		{name: "first key cut, dash alone, null entries, quoted keys, block scalars",
			data: `apiVersion: v1
entries:
  "quoted":
  - description: |
      name: not the name
      - not an item
    'name': quoted
    "version": 0.1.0
    urls:
    - q.tgz
    digest: "abc"
  plain:
  -
    keywords: [a, b,
      c]
    name: plain
    version: 1.0.0-rc.1
    urls:
    - p.tgz
  - null
  -
  - name: plain
    version: 0.9.0
    urls: ["p-0.9.tgz"]
  empty: []
  nulled:
  invalid:
  - name: invalid
    version: not-semver
    urls: [i.tgz]
  - name: invalid
    version: 1.0.0
    type: neither-application-nor-library
    urls: [i.tgz]
  - name: ../escape
    version: 1.0.0
    urls: [i.tgz]
  - version: 1.0.0
    urls: [i.tgz]
generated: 2026-01-01T00:00:00Z
serverInfo:
  contextPath: /v1
publicKeys:
- abc
- def`},
		{name: "a Helm 2 index: no apiVersion per entry", data: "apiVersion: v1\nentries:\n  old:\n  - name: old\n    version: 1.0.0\n    urls:\n    - old.tgz\n"},
		{name: "flow style", generic: true,
			data: `{apiVersion: v1, entries: {app: [{name: app, version: 1.0.0, urls: [a.tgz], keywords: [x]}]}}`},
		{name: "anchors", generic: true,
			data: "apiVersion: v1\nentries:\n  app:\n  - &first\n    name: app\n    version: 1.0.0\n    urls: [a.tgz]\n"},
		{name: "a chart name YAML does not read as a string", generic: true,
			data: "apiVersion: v1\nentries:\n  on:\n  - name: \"on\"\n    version: 1.0.0\n    urls: [a.tgz]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := []byte(tt.data)

			idx, err := parseIndex(data)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(idx.entries).To(Equal(helmIndex(t, data)))
			if tt.generic {
				g.Expect(readsInBatches(data)).To(MatchError(ContainSubstring("not in the block layout")))
			} else {
				g.Expect(readsInBatches(data)).To(Succeed())
			}
		})
	}
}

func TestParseIndex_JSONAgreesWithHelm(t *testing.T) {
	g := NewWithT(t)
	idx := repo.NewIndexFile()
	g.Expect(idx.MustAdd(&helmchart.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0", Keywords: []string{"a"}},
		"app-1.0.0.tgz", "https://example.com", "abc")).To(Succeed())
	g.Expect(idx.MustAdd(&helmchart.Metadata{APIVersion: "v2", Name: "app", Version: "1.1.0"},
		"app-1.1.0.tgz", "https://example.com", "def")).To(Succeed())
	data, err := json.Marshal(idx)
	g.Expect(err).NotTo(HaveOccurred())

	got, err := parseIndex(data)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.entries).To(Equal(helmIndex(t, data)))
	g.Expect(got.entries["app"]).To(HaveLen(2))
}

func TestParseIndex_refusesWhatHelmRefuses(t *testing.T) {
	tests := []struct {
		name, data, wantErr string
	}{
		{name: "empty", data: "", wantErr: "empty"},
		{name: "no apiVersion", data: "entries: {}\n", wantErr: "no API version"},
		{name: "unknown top-level field", data: "apiVersion: v1\nentriez: {}\n", wantErr: `unknown field "entriez"`},
		{name: "unknown entry field", data: "apiVersion: v1\nentries:\n  app:\n  - name: app\n    version: 1.0.0\n    colour: red\n",
			wantErr: `unknown field "colour"`},
		{name: "a kept field of the wrong type", data: "apiVersion: v1\nentries:\n  app:\n  - name: app\n    version: [1]\n",
			wantErr: "cannot unmarshal"},
		{name: "a chart listed twice", data: "apiVersion: v1\nentries:\n  app: []\n  app: []\n", wantErr: `key "app" already set`},
		{name: "a large index not in the block layout",
			data:    `{"apiVersion": "v1", "entries": {"app": [` + strings.Repeat(`{"name": "app"}, `, 1<<16) + "{}]}} # not JSON",
			wantErr: "an index in another layout is read only up to 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			_, err := parseIndex([]byte(tt.data))

			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// hostileIndex is size bytes of one-letter keywords, in one version entry
// or spread over many: the index of issue #42.
func hostileIndex(size, versions int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  hostile:\n")
	for v := range versions {
		fmt.Fprintf(&b, "  - apiVersion: v2\n    name: hostile\n    version: 1.0.%d\n    urls:\n    - hostile-1.0.%d.tgz\n    digest: abc\n    keywords:\n", v, v)
		for range size / versions / len("    - a\n") {
			b.WriteString("    - a\n")
		}
	}
	return []byte(b.String())
}

// TestParseIndex_hostileKeywordsCostNothing: parsing a 9 MiB index of
// one-letter keywords allocated 535 MB (peak about 400 MB) and kept 21 MB
// while the cache counted 9 MiB; now it allocates and keeps next to nothing,
// and the cache counts what is kept.
func TestParseIndex_hostileKeywordsCostNothing(t *testing.T) {
	for _, versions := range []int{1, 1000} {
		t.Run(fmt.Sprintf("%d versions", versions), func(t *testing.T) {
			g := NewWithT(t)
			data := hostileIndex(9<<20, versions)
			var idx *index
			var err error

			cost := measureMemory(func() { idx, err = parseIndex(data) }, func() any { return idx })

			runtime.KeepAlive(data)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(idx.entries["hostile"]).To(HaveLen(versions))
			t.Logf("%d MiB index, %d versions: allocated %d KiB, retained %d KiB, cache cost %d KiB",
				len(data)>>20, versions, cost.allocated>>10, cost.retained>>10, idx.size>>10)
			g.Expect(cost.allocated).To(BeNumerically("<", 16<<20), "parsing allocates a bounded amount, not a multiple of the index")
			g.Expect(cost.retained).To(BeNumerically("<", 512<<10), "keywords are never kept")
		})
	}
}

// TestParseIndex_sizeEstimatesWhatIsHeld: the cost an index is cached at is
// within a factor of two of the memory it holds.
func TestParseIndex_sizeEstimatesWhatIsHeld(t *testing.T) {
	g := NewWithT(t)
	data := realisticIndex(t, 200, 25)
	var idx *index
	var err error

	cost := measureMemory(func() { idx, err = parseIndex(data) }, func() any { return idx })

	runtime.KeepAlive(data)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("%d KiB index of 5000 versions: allocated %d KiB, retained %d KiB, cache cost %d KiB",
		len(data)>>10, cost.allocated>>10, cost.retained>>10, idx.size>>10)
	g.Expect(idx.size).To(BeNumerically(">=", cost.retained/2))
	g.Expect(idx.size).To(BeNumerically("<=", cost.retained*2))
	g.Expect(idx.size).To(BeNumerically("<", int64(len(data))/4), "descriptions and the like are not kept")
}

// TestFetcher_index_cachedAtWhatItHolds: an index is cached at the memory
// it holds, not at its download size: a 3 MiB index whose entries hold under
// 512 KiB stays in a 2 MiB cache, where counted as downloaded it was never
// stored and every lookup downloaded and parsed it again.
func TestFetcher_index_cachedAtWhatItHolds(t *testing.T) {
	g := NewWithT(t)
	data := realisticIndex(t, 100, 25)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	f := NewFetcher(Options{MaxIndexCacheBytes: 2 << 20})
	r := &Repository{URL: srv.URL}

	for range 3 {
		version, err := f.ResolveVersion(context.Background(), r, "chart-7", "*", false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(version).To(Equal("2.4.0"))
	}

	g.Expect(len(data)).To(BeNumerically(">", 2<<20))
	g.Expect(requests.Load()).To(Equal(int32(1)))
}

func BenchmarkParseIndex(b *testing.B) {
	for name, data := range map[string][]byte{
		"realistic-5000-versions": realisticIndex(b, 200, 25),
		"hostile-9MiB-keywords":   hostileIndex(9<<20, 1),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := parseIndex(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// memoryCost is what running a function cost the heap.
type memoryCost struct {
	// allocated counts every byte allocated while it ran: an upper bound of
	// its peak.
	allocated int64
	// retained is what stays on the heap, after a collection, while
	// result's value is alive.
	retained int64
}

// measureMemory runs run and measures its cost; result returns what it made,
// which is kept alive until measured. Tests using it must not run in parallel.
func measureMemory(run func(), result func() any) memoryCost {
	var before, after, kept runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	runtime.GC()
	runtime.ReadMemStats(&kept)
	runtime.KeepAlive(result())
	return memoryCost{
		allocated: int64(after.TotalAlloc - before.TotalAlloc),
		retained:  int64(kept.HeapAlloc) - int64(before.HeapAlloc),
	}
}
