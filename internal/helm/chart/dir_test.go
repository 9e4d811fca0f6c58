package chart_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

func TestLoadDir_withVendoredDependency(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Dir(chartrepo.ChartDir("withdeps"))

	res, err := chart.LoadDir(root, "./withdeps")

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Name).To(Equal("withdeps"))
	g.Expect(res.Version).To(Equal("0.1.0"))
	g.Expect(res.Chart.Lock).NotTo(BeNil())
	g.Expect(res.Chart.Dependencies()).To(HaveLen(1))
	g.Expect(res.Chart.Dependencies()[0].Name()).To(Equal("sub"))
	g.Expect(res.Digest).To(HavePrefix("sha256:"))

	rel, err := render(res.Chart, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Manifest).To(And(ContainSubstring("name: test-sub"), ContainSubstring(`message: "set by withdeps"`)))
}

// The lock's digest is what `helm dependency build` checks; a stale one
// would make the test chart unusable with the helm CLI.
func TestLoadDir_withdepsLockMatchesChartYAML(t *testing.T) {
	g := NewWithT(t)
	res, err := chart.LoadDir(filepath.Dir(chartrepo.ChartDir("withdeps")), "withdeps")
	g.Expect(err).NotTo(HaveOccurred())

	// helm's internal/resolver.HashReq.
	data, err := json.Marshal([2][]*helmchart.Dependency{res.Chart.Metadata.Dependencies, res.Chart.Lock.Dependencies})
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(data)
	g.Expect(res.Chart.Lock.Digest).To(Equal("sha256:" + hex.EncodeToString(sum[:])))
}

func TestLoadDir_digestFollowsContent(t *testing.T) {
	g := NewWithT(t)
	dir := copyChart(t, "withdeps")
	root := filepath.Dir(dir)
	first, err := chart.LoadDir(root, "withdeps")
	g.Expect(err).NotTo(HaveOccurred())
	again, err := chart.LoadDir(root, "withdeps")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Digest).To(Equal(first.Digest))

	// An edit deep in a subchart changes the digest.
	values := filepath.Join(dir, "charts", "sub", "values.yaml")
	g.Expect(os.WriteFile(values, []byte("message: edited\n"), 0o600)).To(Succeed())
	edited, err := chart.LoadDir(root, "withdeps")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(edited.Digest).NotTo(Equal(first.Digest))
}

func TestLoadDir_missingDependency(t *testing.T) {
	g := NewWithT(t)
	dir := copyChart(t, "withdeps")
	g.Expect(os.RemoveAll(filepath.Join(dir, "charts"))).To(Succeed())

	_, err := chart.LoadDir(filepath.Dir(dir), "withdeps")

	var missing *chart.MissingDependencyError
	g.Expect(errors.As(err, &missing)).To(BeTrue(), "got %v", err)
	g.Expect(missing.Missing).To(Equal([]string{"sub 0.1.0 (Chart.lock)"}))
	g.Expect(err.Error()).To(And(
		ContainSubstring("chart withdeps declares dependencies missing from its charts/ directory: sub 0.1.0"),
		ContainSubstring("helm dependency build"),
	))
}

func TestLoadDir_missingDependencyWithoutLock(t *testing.T) {
	g := NewWithT(t)
	dir := copyChart(t, "withdeps")
	g.Expect(os.RemoveAll(filepath.Join(dir, "charts"))).To(Succeed())
	g.Expect(os.Remove(filepath.Join(dir, "Chart.lock"))).To(Succeed())

	_, err := chart.LoadDir(filepath.Dir(dir), "withdeps")

	var missing *chart.MissingDependencyError
	g.Expect(errors.As(err, &missing)).To(BeTrue(), "got %v", err)
	g.Expect(missing.Missing).To(Equal([]string{"sub 0.1.0"}))
}

func TestLoadDir_dependencyNotTheLockedVersion(t *testing.T) {
	g := NewWithT(t)
	dir := copyChart(t, "withdeps")
	sub := filepath.Join(dir, "charts", "sub", "Chart.yaml")
	data, err := os.ReadFile(sub)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("\nversion: 0.1.0\n"))
	writeFile(t, sub, strings.Replace(string(data), "\nversion: 0.1.0\n", "\nversion: 0.2.0\n", 1))

	_, err = chart.LoadDir(filepath.Dir(dir), "withdeps")

	var mismatch *chart.DependencyMismatchError
	g.Expect(errors.As(err, &mismatch)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(Equal("chart withdeps: charts/ holds sub 0.2.0 but Chart.lock pins 0.1.0; run `helm dependency build`"))
}

func TestLoadDir_chartNotFound(t *testing.T) {
	tests := []struct {
		name, path string
	}{
		{name: "no such directory", path: "nope"},
		{name: "a file", path: "small/values.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := chart.LoadDir(filepath.Dir(chartrepo.ChartDir("small")), tt.path)
			var notFound *chart.ChartNotFoundError
			g.Expect(errors.As(err, &notFound)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("chart " + tt.path + " not found"))
		})
	}
}

func TestLoadDir_staysInsideRoot(t *testing.T) {
	root := t.TempDir()
	// An artifact could hold a symlink to anywhere on the operator's disk.
	if err := os.Symlink(chartrepo.ChartDir("realistic"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
	}{
		{name: "dot-dot", path: "../" + filepath.Base(chartrepo.ChartDir("realistic"))},
		{name: "absolute path", path: chartrepo.ChartDir("realistic")},
		{name: "symlink out of the root", path: "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := chart.LoadDir(root, tt.path)
			var notFound *chart.ChartNotFoundError
			g.Expect(errors.As(err, &notFound)).To(BeTrue(), "got %v", err)
		})
	}
}

func TestLoadDir_refusesSymlinksOutOfRoot(t *testing.T) {
	tests := []struct {
		name    string
		link    string // inside the copied chart
		target  func(t *testing.T, root string) string
		wantErr bool
	}{
		{name: "file outside", link: "secret.txt", target: func(*testing.T, string) string { return chartrepo.ChartDir("small") + "/values.yaml" }, wantErr: true},
		{name: "directory outside", link: "templates/more", target: func(*testing.T, string) string { return chartrepo.ChartDir("small") + "/templates" }, wantErr: true},
		{
			name: "directory inside leading outside", link: "templates/more",
			target: func(t *testing.T, root string) string {
				other := filepath.Join(root, "other")
				if err := os.MkdirAll(other, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(chartrepo.ChartDir("small")+"/templates", filepath.Join(other, "escape")); err != nil {
					t.Fatal(err)
				}
				return other
			},
			wantErr: true,
		},
		{name: "file inside", link: "values-copy.yaml", target: func(_ *testing.T, root string) string { return filepath.Join(root, "withdeps", "values.yaml") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := copyChart(t, "withdeps")
			root := filepath.Dir(dir)
			g.Expect(os.Symlink(tt.target(t, root), filepath.Join(dir, tt.link))).To(Succeed())

			_, err := chart.LoadDir(root, "withdeps")

			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("points outside the source artifact")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

func TestFetcher_Fetch_artifactDirectory(t *testing.T) {
	g := NewWithT(t)
	f, _ := newFetcher()

	res, err := fetch(t, f, chart.Request{ArtifactDir: filepath.Dir(chartrepo.ChartDir("withdeps")), Chart: "withdeps"})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Name).To(Equal("withdeps"))
	g.Expect(res.URL).To(Equal(chartrepo.ChartDir("withdeps")))
}

func TestRootOf(t *testing.T) {
	g := NewWithT(t)
	atRoot := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(atRoot, "Chart.yaml"), []byte("name: a\n"), 0o600)).To(Succeed())
	g.Expect(chart.RootOf(atRoot)).To(Equal("."))

	packaged := t.TempDir()
	g.Expect(os.Mkdir(filepath.Join(packaged, "podinfo"), 0o755)).To(Succeed())
	g.Expect(chart.RootOf(packaged)).To(Equal("podinfo"), "a packaged chart unpacks to <name>/")

	g.Expect(os.Mkdir(filepath.Join(packaged, "other"), 0o755)).To(Succeed())
	g.Expect(chart.RootOf(packaged)).To(Equal("."), "two directories: no guess")
}
