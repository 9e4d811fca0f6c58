package chart_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// TestFetcher_Fetch_archiveCacheNeverCrossesCredentials: once a tenant's
// release fetched a chart from a password-protected repository, only a
// request for that repository with the same credentials is served the cached
// archive. Any other request fetches from its own source and fails there,
// even when its index names the very digest that was cached.
func TestFetcher_Fetch_archiveCacheNeverCrossesCredentials(t *testing.T) {
	private := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	private.RequireBasicAuth("team-b", "s3cret")
	nowhere := chartrepo.NewHTTPRepo(t) // serves no archive: every chart URL is a 404
	borrowing := chartrepo.NewHTTPRepo(t)
	borrowing.ServeIndexWithURLs(private, nowhere.URL+"/charts")
	teamB := &chart.Credentials{Username: "team-b", Password: "s3cret"}
	tests := []struct {
		name  string
		url   string
		creds *chart.Credentials
		check func(g Gomega, err error)
	}{
		{name: "another repository naming the digest", url: borrowing.URL, check: func(g Gomega, err error) {
			var status *chart.StatusError
			g.Expect(errors.As(err, &status)).To(BeTrue(), "got %v", err)
			g.Expect(status.StatusCode).To(Equal(404))
			g.Expect(status.URL).To(HavePrefix(nowhere.URL))
		}},
		{name: "another repository with the same credentials", url: borrowing.URL, creds: teamB, check: func(g Gomega, err error) {
			g.Expect(err).To(HaveOccurred())
		}},
		{name: "the same repository without credentials", url: private.URL, check: expectAuthError},
		{name: "the same repository with other credentials", url: private.URL,
			creds: &chart.Credentials{Username: "team-a", Password: "guess"}, check: expectAuthError},
		{name: "the same repository with the same credentials, URL spelt differently", url: private.URL + "/", creds: teamB,
			check: func(g Gomega, err error) { g.Expect(err).NotTo(HaveOccurred()) }},
	}
	f, _ := newFetcher()
	owner := httpRequest(private.URL, "small", "*")
	owner.Repository.Credentials = teamB
	_, err := fetch(t, f, owner)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	archive := private.ChartPath("small", "0.1.0")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			req := httpRequest(tt.url, "small", "*")
			req.Repository.Credentials = tt.creds
			_, err := fetch(t, f, req)
			tt.check(g, err)
		})
	}
	// The owner's release was served from the cache every time.
	NewWithT(t).Expect(private.Requests(archive)).To(Equal(1))
}

func expectAuthError(g Gomega, err error) {
	var authErr *chart.AuthError
	g.Expect(errors.As(err, &authErr)).To(BeTrue(), "got %v", err)
}

// TestFetcher_Fetch_publicArchiveIsSharedOnlyWithItsRepository: a chart of
// a public repository is served from the cache to that repository's next
// release, and not to another public repository naming its digest.
func TestFetcher_Fetch_publicArchiveIsSharedOnlyWithItsRepository(t *testing.T) {
	g := NewWithT(t)
	public := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	nowhere := chartrepo.NewHTTPRepo(t)
	other := chartrepo.NewHTTPRepo(t)
	other.ServeIndexWithURLs(public, nowhere.URL+"/charts")
	f, _ := newFetcher()

	for range 2 {
		_, err := fetch(t, f, httpRequest(public.URL, "small", "*"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err := fetch(t, f, httpRequest(other.URL, "small", "*"))

	g.Expect(public.Requests(public.ChartPath("small", "0.1.0"))).To(Equal(1))
	var status *chart.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "got %v", err)
	g.Expect(status.StatusCode).To(Equal(404))
}

// TestFetcher_Fetch_ociManifestCacheNeverCrossesRegistries: a registry that
// answers a tag with the digest of another tenant's private manifest does
// not get that tenant's cached chart: the pull goes to the registry that
// claimed it, which has nothing to give.
func TestFetcher_Fetch_ociManifestCacheNeverCrossesRegistries(t *testing.T) {
	g := NewWithT(t)
	private := chartrepo.NewOCIRegistry(t)
	private.RequireBasicAuth("team-b", "s3cret")
	pushed := private.Push(chartrepo.ChartDir("small"), "0.1.0")
	hostile := chartrepo.NewHostileRegistry(t)
	hostile.ClaimManifest("small", "0.1.0", pushed[0])
	f, _ := newFetcher()
	owner := ociRequest(private.URL(), "small", "0.1.0")
	owner.Repository.Credentials = &chart.Credentials{Username: "team-b", Password: "s3cret"}
	res, err := fetch(t, f, owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ManifestDigest).To(Equal(pushed[0].ManifestDigest))

	_, err = fetch(t, f, ociRequest(hostile.URL(), "small", "0.1.0"))

	var status *chart.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "got %v", err)
	g.Expect(status.StatusCode).To(Equal(404))
}
