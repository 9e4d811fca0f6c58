package chart_test

import (
	"errors"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

func loadWithdeps(t *testing.T) *chart.Result {
	t.Helper()
	res, err := chart.LoadDir(filepath.Dir(chartrepo.ChartDir("withdeps")), "withdeps")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestMergeValuesFiles_order(t *testing.T) {
	tests := []struct {
		name        string
		files       []string
		wantMessage string
		wantSub     map[string]any
	}{
		{
			name:        "none keeps values.yaml",
			wantMessage: "from withdeps",
			wantSub:     map[string]any{"enabled": true, "message": "set by withdeps"},
		},
		{
			name:        "later file wins",
			files:       []string{"values.yaml", "values-prod.yaml", "values-override.yaml"},
			wantMessage: "from values-override",
			wantSub:     map[string]any{"enabled": true, "message": "set by values-prod"},
		},
		{
			name:        "reversed order",
			files:       []string{"values.yaml", "values-override.yaml", "./values-prod.yaml"},
			wantMessage: "from values-prod",
			wantSub:     map[string]any{"enabled": true, "message": "set by values-prod"},
		},
		{
			// As in Flux: listed files replace values.yaml, they do not add to it.
			name:        "values.yaml not listed is not used",
			files:       []string{"values-prod.yaml"},
			wantMessage: "from values-prod",
			wantSub:     map[string]any{"message": "set by values-prod"},
		},
		{
			name:        "values.yaml listed again",
			files:       []string{"values-prod.yaml", "values.yaml"},
			wantMessage: "from withdeps",
			wantSub:     map[string]any{"enabled": true, "message": "set by withdeps"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := loadWithdeps(t).Chart

			values, err := chart.MergeValuesFiles(ch, tt.files, false)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(values).To(HaveKeyWithValue("message", tt.wantMessage))
			g.Expect(values).To(HaveKeyWithValue("sub", tt.wantSub))
			// The chart's own values are left alone.
			g.Expect(ch.Values).To(HaveKeyWithValue("message", "from withdeps"))
		})
	}
}

func TestMergeValuesFiles_missingFile(t *testing.T) {
	g := NewWithT(t)

	_, err := chart.MergeValuesFiles(loadWithdeps(t).Chart, []string{"values-prod.yaml", "values-staging.yaml"}, false)

	var missing *chart.MissingValuesFileError
	g.Expect(errors.As(err, &missing)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(Equal("values file values-staging.yaml not found in chart withdeps"))
}

func TestMergeValuesFiles_ignoreMissingFiles(t *testing.T) {
	g := NewWithT(t)
	ch := loadWithdeps(t).Chart

	withMissing, err := chart.MergeValuesFiles(ch, []string{"values-prod.yaml", "values-staging.yaml"}, true)
	g.Expect(err).NotTo(HaveOccurred())
	without, err := chart.MergeValuesFiles(ch, []string{"values-prod.yaml"}, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(withMissing).To(Equal(without), "the missing file was not skipped")
	g.Expect(withMissing).NotTo(BeEmpty())
}

func TestMergeValuesFiles_cannotLeaveChart(t *testing.T) {
	g := NewWithT(t)

	_, err := chart.MergeValuesFiles(loadWithdeps(t).Chart, []string{"../small/values.yaml"}, false)

	var missing *chart.MissingValuesFileError
	g.Expect(errors.As(err, &missing)).To(BeTrue(), "got %v", err)
}

func TestFetcher_Fetch_appliesValuesFiles(t *testing.T) {
	root := filepath.Dir(chartrepo.ChartDir("withdeps"))
	tests := []struct {
		name  string
		files []string
		want  string
	}{
		// Flux's form for charts in a GitRepository: relative to the artifact.
		{name: "relative to the artifact", files: []string{"withdeps/values-prod.yaml"}, want: "from values-prod"},
		{name: "relative to the chart", files: []string{"values-prod.yaml", "values-override.yaml"}, want: "from values-override"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()

			res, err := fetch(t, f, chart.Request{ArtifactDir: root, Chart: "withdeps", ValuesFiles: tt.files})

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Chart.Values).To(HaveKeyWithValue("message", tt.want))
		})
	}
}

func TestFetcher_Fetch_valuesFilesOfRepositoryChart(t *testing.T) {
	g := NewWithT(t)
	dir := copyChart(t, "small")
	writeFile(t, filepath.Join(dir, "values-prod.yaml"), "message: from prod\n")
	repo := chartrepo.NewHTTPRepo(t, dir)
	f, _ := newFetcher()

	req := httpRequest(repo.URL, "small", "*")
	req.ValuesFiles = []string{"values-prod.yaml"}
	res, err := fetch(t, f, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Chart.Values).To(HaveKeyWithValue("message", "from prod"))
	g.Expect(res.Chart.Values).NotTo(HaveKey("replicaCount"), "values.yaml is used only when listed, as in Flux")

	req.ValuesFiles = []string{"values.yaml", "values-prod.yaml"}
	res, err = fetch(t, f, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Chart.Values).To(HaveKeyWithValue("message", "from prod"))
	g.Expect(res.Chart.Values).To(HaveKeyWithValue("replicaCount", BeNumerically("==", 1)))

	req.ValuesFiles = []string{"values-missing.yaml"}
	_, err = fetch(t, f, req)
	var missing *chart.MissingValuesFileError
	g.Expect(errors.As(err, &missing)).To(BeTrue(), "got %v", err)
}
