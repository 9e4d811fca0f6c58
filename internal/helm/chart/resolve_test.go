package chart_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// A watcher asks "what would this range resolve to now?" without any chart
// being downloaded, and sees a newly published version at once when it
// revalidates, whatever the TTL.
func TestFetcher_ResolveVersion_seesNewVersionsOnRevalidate(t *testing.T) {
	for _, kind := range []string{"http", "oci"} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f, _ := newFetcher()
			var r *chart.Repository
			var publish func(version string)
			var downloads func() int
			if kind == "http" {
				repo := chartrepo.NewHTTPRepo(t)
				repo.Add(chartrepo.ChartDir("small"), "0.1.0")
				r = &chart.Repository{URL: repo.URL}
				publish = func(v string) { repo.Add(chartrepo.ChartDir("small"), v) }
				downloads = func() int { return repo.Requests(repo.ChartPath("small", "0.1.0")) }
			} else {
				registry := chartrepo.NewOCIRegistry(t)
				registry.Push(chartrepo.ChartDir("small"), "0.1.0")
				r = &chart.Repository{URL: registry.URL(), Type: chart.RepositoryTypeOCI, Insecure: true}
				publish = func(v string) { registry.Push(chartrepo.ChartDir("small"), v) }
				downloads = func() int { return 0 }
			}

			g.Expect(f.ResolveVersion(ctx, r, "small", "~0.1", false)).To(Equal("0.1.0"))
			publish("0.1.1")
			// Within the TTL the cached list answers...
			g.Expect(f.ResolveVersion(ctx, r, "small", "~0.1", false)).To(Equal("0.1.0"))
			// ...revalidating asks the repository.
			g.Expect(f.ResolveVersion(ctx, r, "small", "~0.1", true)).To(Equal("0.1.1"))
			// A range the new version is outside of resolves as before.
			g.Expect(f.ResolveVersion(ctx, r, "small", "0.1.0", true)).To(Equal("0.1.0"))
			g.Expect(downloads()).To(BeZero(), "resolving must not download a chart")

			_, err := f.ResolveVersion(ctx, r, "small", ">=2", false)
			var notFound *chart.VersionNotFoundError
			g.Expect(err).To(BeAssignableToTypeOf(notFound))
		})
	}
}

// A suspended repository keeps serving what was last fetched, as a suspended
// Flux source keeps its last artifact: no request, even past the TTL.
func TestFetcher_suspendedRepositoryUsesItsLastIndex(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0")
	f, clock := newFetcher()
	r := &chart.Repository{URL: repo.URL}

	res, err := fetch(t, f, chart.Request{Chart: "small", Repository: r})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.SourceRevision).To(HavePrefix("sha256:"))
	first := res.SourceRevision

	repo.Add(chartrepo.ChartDir("small"), "0.2.0")
	clock.Advance(time.Hour)
	repo.ResetCounts()
	suspended := *r
	suspended.Suspended = true
	res, err = fetch(t, f, chart.Request{Chart: "small", Repository: &suspended})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("0.1.0"))
	g.Expect(res.SourceRevision).To(Equal(first))
	g.Expect(repo.Requests("/index.yaml")).To(BeZero())
	g.Expect(f.ResolveVersion(context.Background(), &suspended, "small", "", true)).To(Equal("0.1.0"))
	g.Expect(repo.Requests("/index.yaml")).To(BeZero())

	// Resumed, the new version is seen and the revision names the new index.
	res, err = fetch(t, f, chart.Request{Chart: "small", Repository: r})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("0.2.0"))
	g.Expect(res.SourceRevision).NotTo(Equal(first))
	g.Expect(repo.Requests("/index.yaml")).To(Equal(1))
}
