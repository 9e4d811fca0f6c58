package chart_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// archiveFile is a file of a test chart archive: data, or size zero bytes.
type archiveFile struct {
	name string
	data []byte
	size int64
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// chartArchive packages a chart named name, version 1.0.0, with files
// besides its Chart.yaml, the way `helm package` lays it out (every path
// under name/), gzip-compressed as tightly as gzip can.
func chartArchive(t testing.TB, name string, files ...archiveFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	chartYAML := archiveFile{name: "Chart.yaml", data: []byte("apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n")}
	for _, f := range append([]archiveFile{chartYAML}, files...) {
		content := io.Reader(bytes.NewReader(f.data))
		size := int64(len(f.data))
		if f.data == nil {
			content, size = io.LimitReader(zeros{}, f.size), f.size
		}
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + f.name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, content); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serveArchive serves a one-chart repository whose index lists archive as
// version 1.0.0 of name, and returns the repository's URL.
func serveArchive(t *testing.T, name string, archive []byte) string {
	t.Helper()
	sum := sha256.Sum256(archive)
	index := repo.NewIndexFile()
	file := name + "-1.0.0.tgz"
	md := &helmchart.Metadata{APIVersion: helmchart.APIVersionV2, Name: name, Version: "1.0.0"}
	if err := index.MustAdd(md, file, "", hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	indexYAML, err := yaml.Marshal(index)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			_, _ = w.Write(indexYAML)
		case "/" + file:
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// zeroFiles are n files of size zero bytes.
func zeroFiles(n int, size int64) []archiveFile {
	files := make([]archiveFile, n)
	for i := range files {
		files[i] = archiveFile{name: fmt.Sprintf("files/zeros-%d", i), size: size}
	}
	return files
}

// manyFiles are n empty files.
func manyFiles(n int) []archiveFile {
	files := make([]archiveFile, n)
	for i := range files {
		files[i] = archiveFile{name: fmt.Sprintf("files/%d", i), data: []byte{}}
	}
	return files
}

// TestFetcher_Fetch_chartArchiveExpansionIsCapped: an archive well under
// --max-chart-size that expands past a cap is refused before Helm's loader
// sees it, with a LimitError naming the cap's flag; and no more than the cap
// is decompressed to find out (52 MB of zeros cost Helm's loader 52 MB, and
// more to grow its buffers).
func TestFetcher_Fetch_chartArchiveExpansionIsCapped(t *testing.T) {
	bomb := chartArchive(t, "bomb", zeroFiles(5, 4<<20)...)
	tests := []struct {
		name  string
		files []archiveFile
		// message is the error's, after "<what> <url>".
		message string
	}{
		{name: "52 MB of zeros", files: zeroFiles(13, 4<<20),
			message: " is larger than the 16 MiB limit (--max-chart-decompressed-size)"},
		{name: "a packaged subchart of 20 MB of zeros", files: []archiveFile{{name: "charts/bomb.tgz", data: bomb}},
			message: " is larger than the 16 MiB limit (--max-chart-decompressed-size)"},
		{name: "one large file", files: []archiveFile{{name: "templates/big.yaml", size: 6 << 20}},
			message: " declares 6 MiB, over the 5 MiB limit (--max-chart-file-size)"},
		{name: "many empty files", files: manyFiles(5000),
			message: " has more than 5000 files and directories, the limit (--max-chart-files)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			archive := chartArchive(t, "hostile", tt.files...)
			g.Expect(len(archive)).To(BeNumerically("<", 256<<10), "the archive itself is small")
			url := serveArchive(t, "hostile", archive)
			f, _ := newFetcher()
			var err error

			allocated := allocatedBy(func() { _, err = fetch(t, f, httpRequest(url, "hostile", "*")) })

			var limit *chart.LimitError
			g.Expect(errors.As(err, &limit)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(HaveSuffix(tt.message))
			g.Expect(err.Error()).To(ContainSubstring("chart archive " + url + "/hostile-1.0.0.tgz"))
			g.Expect(chart.IsTerminal(err)).To(BeTrue(), "a cap is the user's to raise, not a retry's")
			g.Expect(allocated).To(BeNumerically("<", 8<<20), "the expansion is measured, not held")
		})
	}
}

// TestFetcher_Fetch_chartArchiveWithinTheCapsLoads: the caps are on the
// expansion, not on the archive's files being there: a chart at the caps
// loads, with its packaged subchart.
func TestFetcher_Fetch_chartArchiveWithinTheCapsLoads(t *testing.T) {
	g := NewWithT(t)
	sub := chartArchive(t, "sub", archiveFile{name: "templates/cm.yaml", data: []byte("# nothing\n")})
	archive := chartArchive(t, "fits",
		archiveFile{name: "files/a", size: 1 << 20}, archiveFile{name: "charts/sub.tgz", data: sub})
	url := serveArchive(t, "fits", archive)
	f := chart.NewFetcher(chart.Options{MaxDecompressedChartSize: 2 << 20, MaxChartFileSize: 1 << 20, MaxChartFiles: 5})

	res, err := fetch(t, f, httpRequest(url, "fits", "*"))

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Chart.Dependencies()).To(HaveLen(1))
	g.Expect(res.Chart.Files[0].Data).To(HaveLen(1 << 20))
}

// TestFetcher_Fetch_ociChartLayerExpansionIsCapped: a chart pulled from a
// registry is measured the same way.
func TestFetcher_Fetch_ociChartLayerExpansionIsCapped(t *testing.T) {
	g := NewWithT(t)
	dir := copyChart(t, "small")
	g.Expect(os.WriteFile(filepath.Join(dir, "big.txt"), make([]byte, 300<<10), 0o600)).To(Succeed())
	registry := chartrepo.NewOCIRegistry(t)
	registry.Push(dir)
	f := chart.NewFetcher(chart.Options{MaxChartFileSize: 256 << 10})

	_, err := fetch(t, f, ociRequest(registry.URL(), "small", "*"))

	g.Expect(err).To(MatchError(HaveSuffix("declares 300 KiB, over the 256 KiB limit (--max-chart-file-size)")))
	g.Expect(err).To(MatchError(HavePrefix("file big.txt of chart layer of oci://")))
}

// TestFetcher_Fetch_artifactChartExpansionIsCapped: a chart directory of a
// source artifact is measured as Helm's loader will read it, before it reads
// a file; so are values files of the artifact.
func TestFetcher_Fetch_artifactChartExpansionIsCapped(t *testing.T) {
	bomb := chartArchive(t, "bomb", zeroFiles(10, 200<<10)...)
	tests := []struct {
		name string
		// files are added to a copy of the small test chart.
		files       map[string][]byte
		valuesFiles []string
		// message is the error's; "" means the chart loads.
		message string
	}{
		{name: "one large file", files: map[string][]byte{"big.txt": make([]byte, 300<<10)},
			message: "file big.txt of chart small in the source artifact is larger than the 256 KiB limit (--max-chart-file-size)"},
		{name: "one large file .helmignore leaves out",
			files: map[string][]byte{"big.txt": make([]byte, 300<<10), ".helmignore": []byte("big.txt\n")}},
		{name: "many files", files: manyDirFiles(50),
			message: "chart small in the source artifact has more than 50 files and directories, the limit (--max-chart-files)"},
		{name: "large files summed", files: map[string][]byte{"a": make([]byte, 200<<10), "b": make([]byte, 200<<10),
			"c": make([]byte, 200<<10), "d": make([]byte, 200<<10), "e": make([]byte, 200<<10), "f": make([]byte, 200<<10)},
			message: "decompressed chart small in the source artifact is larger than the 1 MiB limit (--max-chart-decompressed-size)"},
		{name: "a packaged subchart of 2 MB of zeros", files: map[string][]byte{"charts/bomb.tgz": bomb},
			message: "decompressed chart small in the source artifact is larger than the 1 MiB limit (--max-chart-decompressed-size)"},
		{name: "a large values file", files: map[string][]byte{"../values-big.yaml": make([]byte, 300<<10)},
			valuesFiles: []string{"values-big.yaml"},
			message:     "values file values-big.yaml in the source artifact is larger than the 256 KiB limit (--max-chart-file-size)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := copyChart(t, "small")
			for name, data := range tt.files {
				g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o750)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(dir, name), data, 0o600)).To(Succeed())
			}
			f := chart.NewFetcher(chart.Options{MaxDecompressedChartSize: 1 << 20, MaxChartFileSize: 256 << 10, MaxChartFiles: 50})

			_, err := fetch(t, f, chart.Request{Chart: "small", ArtifactDir: filepath.Dir(dir), ValuesFiles: tt.valuesFiles})

			if tt.message == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var limit *chart.LimitError
			g.Expect(errors.As(err, &limit)).To(BeTrue(), "got %v", err)
			g.Expect(err).To(MatchError(tt.message))
		})
	}
}

// manyDirFiles are n empty files for a chart directory.
func manyDirFiles(n int) map[string][]byte {
	files := map[string][]byte{}
	for i := range n {
		files[fmt.Sprintf("files/%d", i)] = nil
	}
	return files
}

// allocatedBy counts the bytes the heap allocated while run ran: an upper
// bound of what it held at its peak.
func allocatedBy(run func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}
