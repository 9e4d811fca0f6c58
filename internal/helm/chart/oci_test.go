package chart_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// ociRequest asks for a chart of an OCI registry served over plain HTTP.
func ociRequest(url, name, version string) chart.Request {
	return chart.Request{
		Chart:      name,
		Version:    version,
		Repository: &chart.Repository{URL: url, Type: chart.RepositoryTypeOCI, Insecure: true},
	}
}

func TestFetcher_Fetch_ociResolvesRange(t *testing.T) {
	registry := chartrepo.NewOCIRegistry(t)
	pushed := registry.Push(chartrepo.ChartDir("small"), "0.1.0", "0.2.0")
	tests := []struct {
		name, version string
		want          chartrepo.Pushed
	}{
		{name: "range", version: ">=0.1.0", want: pushed[1]},
		{name: "any", version: "", want: pushed[1]},
		{name: "exact", version: "0.1.0", want: pushed[0]},
	}
	f, _ := newFetcher()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := fetch(t, f, ociRequest(registry.URL(), "small", tt.version))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Version).To(Equal(tt.want.Version))
			g.Expect(res.Chart.Metadata.Version).To(Equal(tt.want.Version))
			g.Expect(res.Chart.Templates).NotTo(BeEmpty())
			g.Expect(res.Digest).To(Equal("sha256:" + tt.want.Digest))
			g.Expect(res.ManifestDigest).To(Equal(tt.want.ManifestDigest))
			g.Expect(res.URL).To(Equal("oci://" + tt.want.Ref))
		})
	}
}

func TestFetcher_Fetch_ociCachesPulledCharts(t *testing.T) {
	g := NewWithT(t)
	registry := chartrepo.NewOCIRegistry(t)
	pushed := registry.Push(chartrepo.ChartDir("small"), "0.1.0")
	registry.ResetCounts() // pushing asked whether the blob existed
	f, _ := newFetcher()

	for range 3 {
		_, err := fetch(t, f, ociRequest(registry.URL(), "small", "*"))
		g.Expect(err).NotTo(HaveOccurred())
	}

	g.Expect(registry.Requests(pushed[0].BlobPath)).To(Equal(1))
	// Tags are listed once per TTL; the tag is resolved on every fetch.
	g.Expect(registry.Requests("/v2/charts/small/tags/list")).To(Equal(1))
}

func TestFetcher_Fetch_ociErrors(t *testing.T) {
	registry := chartrepo.NewOCIRegistry(t)
	registry.Push(chartrepo.ChartDir("small"), "0.1.0", "0.2.0")
	tests := []struct {
		name, chart, version string
		check                func(g Gomega, err error)
	}{
		{
			name: "chart not found", chart: "podinfo", version: "*",
			check: func(g Gomega, err error) {
				var notFound *chart.ChartNotFoundError
				g.Expect(errors.As(err, &notFound)).To(BeTrue(), "got %v", err)
				g.Expect(err.Error()).To(Equal("chart podinfo not found in " + registry.URL()))
			},
		},
		{
			name: "version not found", chart: "small", version: ">=9.0.0",
			check: func(g Gomega, err error) {
				g.Expect(err).To(MatchError("no version of small matches >=9.0.0; available: 0.2.0, 0.1.0"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()
			_, err := fetch(t, f, ociRequest(registry.URL(), tt.chart, tt.version))
			tt.check(g, err)
		})
	}
}

func TestFetcher_Fetch_ociBasicAuth(t *testing.T) {
	registry := chartrepo.NewOCIRegistry(t)
	registry.RequireBasicAuth("reader", "s3cret")
	registry.Push(chartrepo.ChartDir("small"), "0.1.0")
	tests := []struct {
		name        string
		credentials *chart.Credentials
		wantErr     bool
	}{
		{name: "right credentials", credentials: &chart.Credentials{Username: "reader", Password: "s3cret"}},
		{name: "wrong password", credentials: &chart.Credentials{Username: "reader", Password: "nope"}, wantErr: true},
		{name: "no credentials", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()
			req := ociRequest(registry.URL(), "small", "*")
			req.Repository.Credentials = tt.credentials

			res, err := fetch(t, f, req)

			if !tt.wantErr {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.Version).To(Equal("0.1.0"))
				return
			}
			var authErr *chart.AuthError
			g.Expect(errors.As(err, &authErr)).To(BeTrue(), "got %v", err)
			g.Expect(authErr.StatusCode).To(Equal(401))
		})
	}
}

func TestFetcher_Fetch_ociUnreachable(t *testing.T) {
	g := NewWithT(t)
	registry := chartrepo.NewOCIRegistry(t)
	registry.Close()
	f, _ := newFetcher()

	_, err := fetch(t, f, ociRequest(registry.URL(), "small", "*"))

	var unreachable *chart.UnreachableError
	g.Expect(errors.As(err, &unreachable)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(registry.Host))
}

// TestFetcher_Fetch_ociByTagOrDigest: a HelmRelease's spec.chart.spec.ref
// (kind OCIRepository) pulls any tag, semver or not, without listing the
// repository's tags, or a manifest by digest; a tag the registry does not
// have is the user's to fix.
func TestFetcher_Fetch_ociByTagOrDigest(t *testing.T) {
	registry := chartrepo.NewOCIRegistry(t)
	old := registry.Push(chartrepo.ChartDir("small"), "0.1.0")[0]
	latest := registry.PushTag(chartrepo.ChartDir("small"), "0.2.0", "latest")
	registry.ResetCounts()
	f, _ := newFetcher()
	byRef := func(ref chart.OCIRef) chart.Request {
		req := ociRequest(registry.URL(), "small", "")
		req.OCIRef = &ref
		return req
	}
	for name, tt := range map[string]struct {
		ref  chart.OCIRef
		want chartrepo.Pushed
	}{
		"a tag that is no version": {chart.OCIRef{Tag: "latest"}, latest},
		"a version's tag":          {chart.OCIRef{Tag: "0.1.0"}, old},
		"a digest wins over a tag": {chart.OCIRef{Tag: "latest", Digest: old.ManifestDigest}, old},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := fetch(t, f, byRef(tt.ref))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Version).To(Equal(tt.want.Version))
			g.Expect(res.ManifestDigest).To(Equal(tt.want.ManifestDigest))
			g.Expect(res.SourceRevision).To(Equal(tt.want.ManifestDigest))
			g.Expect(res.Digest).To(Equal("sha256:" + tt.want.Digest))
		})
	}
	g := NewWithT(t)
	g.Expect(registry.Requests("/v2/charts/small/tags/list")).To(BeZero(), "a tag or digest needs no tag list")

	_, err := fetch(t, f, byRef(chart.OCIRef{Tag: "0.9.9"}))
	g.Expect(err).To(HaveOccurred())
	g.Expect(chart.IsTerminal(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("small:0.9.9"))
}
