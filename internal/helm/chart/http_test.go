package chart_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

func TestFetcher_Fetch_resolvesVersionRanges(t *testing.T) {
	repo := chartrepo.NewHTTPRepo(t)
	archives := repo.Add(chartrepo.ChartDir("small"), "0.1.0", "0.2.0", "0.10.0", "1.0.0-rc.1")
	digests := map[string]string{}
	for _, a := range archives {
		digests[a.Version] = "sha256:" + a.Digest
	}
	tests := []struct {
		name, version, want string
	}{
		{name: "empty means any stable version", version: "", want: "0.10.0"},
		{name: "star skips prereleases", version: "*", want: "0.10.0"},
		{name: "range compares semver, not strings", version: ">=0.1.0 <0.10.0", want: "0.2.0"},
		{name: "tilde range", version: "~0.1", want: "0.1.0"},
		{name: "exact version", version: "0.1.0", want: "0.1.0"},
		{name: "exact prerelease", version: "1.0.0-rc.1", want: "1.0.0-rc.1"},
	}
	f, _ := newFetcher()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := fetch(t, f, httpRequest(repo.URL, "small", tt.version))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Version).To(Equal(tt.want))
			g.Expect(res.Name).To(Equal("small"))
			g.Expect(res.Chart.Metadata.Version).To(Equal(tt.want))
			g.Expect(res.Digest).To(Equal(digests[tt.want]))
			g.Expect(res.URL).To(Equal(repo.URL + repo.ChartPath("small", tt.want)))
		})
	}
}

func TestFetcher_Fetch_relativeArchiveURLs(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	repo.UseRelativeURLs(true)
	f, _ := newFetcher()

	// A trailing slash on the repository URL must not change the archive URL.
	res, err := fetch(t, f, httpRequest(repo.URL+"/", "small", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.URL).To(Equal(repo.URL + repo.ChartPath("small", "0.1.0")))
	g.Expect(repo.Requests(repo.ChartPath("small", "0.1.0"))).To(Equal(1))
}

func TestFetcher_Fetch_cachesIndexWithinTTL(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	f, clock := newFetcher()

	for range 3 {
		_, err := fetch(t, f, httpRequest(repo.URL, "small", "*"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(repo.Requests(chartrepo.IndexPath)).To(Equal(1))

	// Past the TTL the index is revalidated, and an unchanged one is not sent.
	clock.Advance(chart.DefaultIndexTTL + time.Second)
	_, err := fetch(t, f, httpRequest(repo.URL, "small", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Requests(chartrepo.IndexPath)).To(Equal(2))
	g.Expect(repo.NotModified(chartrepo.IndexPath)).To(Equal(1))

	// A new version published is seen after the next TTL.
	repo.Add(chartrepo.ChartDir("small"), "0.2.0")
	res, err := fetch(t, f, httpRequest(repo.URL, "small", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("0.1.0"), "the cached index is still fresh")
	clock.Advance(chart.DefaultIndexTTL + time.Second)
	res, err = fetch(t, f, httpRequest(repo.URL, "small", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("0.2.0"))
	g.Expect(repo.Requests(chartrepo.IndexPath)).To(Equal(3))
	g.Expect(repo.NotModified(chartrepo.IndexPath)).To(Equal(1))
}

func TestFetcher_Fetch_cachesArchiveByDigest(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0", "0.2.0")
	f, _ := newFetcher()

	// Two releases asking differently for the same version.
	first, err := fetch(t, f, httpRequest(repo.URL, "small", "0.2.0"))
	g.Expect(err).NotTo(HaveOccurred())
	second, err := fetch(t, f, httpRequest(repo.URL, "small", ">=0.2.0"))
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(repo.Requests(repo.ChartPath("small", "0.2.0"))).To(Equal(1))
	g.Expect(second.Digest).To(Equal(first.Digest))
	// Each release gets a chart of its own: Helm's actions change charts.
	g.Expect(second.Chart).NotTo(BeIdenticalTo(first.Chart))
}

func TestFetcher_Fetch_concurrentFetchesShareOneDownload(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	chartPath := repo.ChartPath("small", "0.1.0")

	// Hold the archive download until every fetch has started, so that the
	// fetches overlap the download instead of finding it cached.
	arrived := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	repo.OnRequest(func(r *http.Request) {
		if r.URL.Path == chartPath {
			once.Do(func() { close(arrived) })
			<-release
		}
	})
	f, _ := newFetcher()
	const fetches = 10
	var started, done sync.WaitGroup
	results := make([]*chart.Result, fetches)
	errs := make([]error, fetches)
	for i := range fetches {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			results[i], errs[i] = f.Fetch(context.Background(), httpRequest(repo.URL, "small", "*"))
		}()
	}
	started.Wait()
	<-arrived
	close(release)
	done.Wait()

	for i := range fetches {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(results[i].Digest).To(Equal(results[0].Digest))
	}
	g.Expect(repo.Requests(chartPath)).To(Equal(1))
	g.Expect(repo.Requests(chartrepo.IndexPath)).To(Equal(1))
}

func TestFetcher_Fetch_returnsWhenContextEnds(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	arrived := make(chan struct{})
	release := make(chan struct{})
	repo.OnRequest(func(r *http.Request) {
		if r.URL.Path == chartrepo.IndexPath {
			close(arrived)
			<-release
		}
	})
	defer close(release)
	f, _ := newFetcher()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()

	_, err := f.Fetch(ctx, httpRequest(repo.URL, "small", "*"))
	g.Expect(err).To(MatchError(context.Canceled))
}

func TestFetcher_Fetch_chartNotFound(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	f, _ := newFetcher()

	_, err := fetch(t, f, httpRequest(repo.URL, "podinfo", "*"))

	var notFound *chart.ChartNotFoundError
	g.Expect(errors.As(err, &notFound)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(Equal("chart podinfo not found in " + repo.IndexURL()))
	g.Expect(chart.IsTransient(err)).To(BeFalse())
}

func TestFetcher_Fetch_versionNotFound(t *testing.T) {
	tests := []struct {
		name     string
		versions []string
		want     string
	}{
		{
			name:     "lists every version",
			versions: []string{"0.1.0", "0.3.0", "0.2.0"},
			want:     "no version of small matches >=9.0.0; available: 0.3.0, 0.2.0, 0.1.0",
		},
		{
			name:     "lists the five newest",
			versions: []string{"0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0"},
			want:     "no version of small matches >=9.0.0; available: 0.7.0, 0.6.0, 0.5.0, 0.4.0, 0.3.0, … (2 more)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := chartrepo.NewHTTPRepo(t)
			repo.Add(chartrepo.ChartDir("small"), tt.versions...)
			f, _ := newFetcher()

			_, err := fetch(t, f, httpRequest(repo.URL, "small", ">=9.0.0"))

			var notFound *chart.VersionNotFoundError
			g.Expect(errors.As(err, &notFound)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(Equal(tt.want))
		})
	}
}

func TestFetcher_Fetch_invalidVersionRange(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	f, _ := newFetcher()

	_, err := fetch(t, f, httpRequest(repo.URL, "small", ">=x.y"))

	g.Expect(err).To(MatchError(ContainSubstring(`invalid version range ">=x.y" of chart small`)))
}

func TestFetcher_Fetch_unreachableRepository(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	repo.Close()
	f, _ := newFetcher()

	_, err := fetch(t, f, httpRequest(repo.URL, "small", "*"))

	var unreachable *chart.UnreachableError
	g.Expect(errors.As(err, &unreachable)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(repo.IndexURL()))
	g.Expect(chart.IsTransient(err)).To(BeTrue())
}

func TestFetcher_Fetch_basicAuth(t *testing.T) {
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	repo.RequireBasicAuth("reader", "s3cret")
	tests := []struct {
		name        string
		credentials *chart.Credentials
		wantStatus  int
	}{
		{name: "right credentials", credentials: &chart.Credentials{Username: "reader", Password: "s3cret"}},
		{name: "wrong password", credentials: &chart.Credentials{Username: "reader", Password: "nope"}, wantStatus: 401},
		{name: "no credentials", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()
			req := httpRequest(repo.URL, "small", "*")
			req.Repository.Credentials = tt.credentials

			res, err := fetch(t, f, req)

			if tt.wantStatus == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.Version).To(Equal("0.1.0"))
				return
			}
			var authErr *chart.AuthError
			g.Expect(errors.As(err, &authErr)).To(BeTrue(), "got %v", err)
			g.Expect(authErr.StatusCode).To(Equal(tt.wantStatus))
			g.Expect(err.Error()).To(And(ContainSubstring(repo.IndexURL()), ContainSubstring("401 Unauthorized")))
			g.Expect(chart.IsTransient(err)).To(BeFalse())
		})
	}
}

func TestFetcher_Fetch_cacheKeepsCredentialsApart(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	repo.RequireBasicAuth("reader", "s3cret")
	f, _ := newFetcher()
	withCredentials := httpRequest(repo.URL, "small", "*")
	withCredentials.Repository.Credentials = &chart.Credentials{Username: "reader", Password: "s3cret"}
	_, err := fetch(t, f, withCredentials)
	g.Expect(err).NotTo(HaveOccurred())

	// The index cached for one tenant's credentials is not served to a
	// release without them.
	_, err = fetch(t, f, httpRequest(repo.URL, "small", "*"))
	var authErr *chart.AuthError
	g.Expect(errors.As(err, &authErr)).To(BeTrue(), "got %v", err)
}

func TestFetcher_Fetch_digestMismatch(t *testing.T) {
	g := NewWithT(t)
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	repo.Tamper("small", "0.1.0")
	f, _ := newFetcher()

	_, err := fetch(t, f, httpRequest(repo.URL, "small", "*"))

	var mismatch *chart.DigestMismatchError
	g.Expect(errors.As(err, &mismatch)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(repo.URL + repo.ChartPath("small", "0.1.0")))

	// Nothing bad is cached: the next fetch downloads again.
	_, err = fetch(t, f, httpRequest(repo.URL, "small", "*"))
	g.Expect(errors.As(err, &mismatch)).To(BeTrue(), "got %v", err)
	g.Expect(repo.Requests(repo.ChartPath("small", "0.1.0"))).To(Equal(2))
}

func TestFetcher_Fetch_invalidIndex(t *testing.T) {
	tests := []struct {
		name, body string
	}{
		{name: "not YAML", body: "entries: [unclosed"},
		{name: "no apiVersion", body: "entries: {}\n"},
		{name: "empty", body: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(tt.body))
			}))
			defer server.Close()
			f, _ := newFetcher()

			_, err := fetch(t, f, httpRequest(server.URL, "small", "*"))

			var invalid *chart.InvalidIndexError
			g.Expect(errors.As(err, &invalid)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(server.URL + "/index.yaml"))
		})
	}
}

func TestFetcher_Fetch_serverError(t *testing.T) {
	g := NewWithT(t)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer server.Close()
	f, _ := newFetcher()

	_, err := fetch(t, f, httpRequest(server.URL, "small", "*"))

	var status *chart.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "got %v", err)
	g.Expect(status.StatusCode).To(Equal(http.StatusServiceUnavailable))
	g.Expect(chart.IsTransient(err)).To(BeTrue())
}

func TestFetcher_Fetch_rejectsMismatchedTypeAndURL(t *testing.T) {
	tests := []struct {
		name string
		repo chart.Repository
		want string
	}{
		{name: "oci URL without type", repo: chart.Repository{URL: "oci://registry.example/charts"}, want: "set type: oci"},
		{name: "oci type with https URL", repo: chart.Repository{URL: "https://charts.example", Type: "oci"}, want: "must start with oci://"},
		{name: "unknown type", repo: chart.Repository{URL: "https://charts.example", Type: "git"}, want: `unknown type "git"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()
			_, err := fetch(t, f, chart.Request{Chart: "small", Repository: &tt.repo})
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}
