package chart_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/testpki"
)

// authCase is one way of authenticating to a repository and what it gives.
type authCase struct {
	name        string
	credentials *chart.Credentials
	// wantErr checks the error; nil means the fetch succeeds.
	wantErr func(g Gomega, err error)
}

// refused expects an AuthError of the step, saying whether credentials were sent.
func refused(step string, anonymous bool) func(Gomega, error) {
	return func(g Gomega, err error) {
		var authErr *chart.AuthError
		g.Expect(errors.As(err, &authErr)).To(BeTrue(), "got %v", err)
		g.Expect(authErr.Step).To(Equal(step))
		g.Expect(authErr.Anonymous).To(Equal(anonymous))
		g.Expect(err.Error()).To(ContainSubstring(step + ": 401 Unauthorized from "))
		g.Expect(chart.IsTerminal(err)).To(BeTrue())
	}
}

// unreachable expects the TLS handshake to fail with a message containing want.
func unreachable(want string) func(Gomega, error) {
	return func(g Gomega, err error) {
		var unreachable *chart.UnreachableError
		g.Expect(errors.As(err, &unreachable)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring(want))
	}
}

func runAuthCases(t *testing.T, cases []authCase, request func() chart.Request) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()
			req := request()
			req.Repository.Credentials = tc.credentials

			res, err := fetch(t, f, req)

			if tc.wantErr != nil {
				tc.wantErr(g, err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Version).To(Equal("0.1.0"))
			g.Expect(res.Chart.Templates).NotTo(BeEmpty())
		})
	}
}

func TestFetcher_Fetch_httpsWithBasicAuth(t *testing.T) {
	ca := testpki.NewCA(t, "repo CA")
	repo := chartrepo.NewHTTPSRepo(t, ca.ServerTLS(false), chartrepo.ChartDir("small"))
	repo.RequireBasicAuth("reader", "s3cret")
	runAuthCases(t, []authCase{
		{name: "CA and right password", credentials: &chart.Credentials{Username: "reader", Password: "s3cret", CA: ca.CertPEM}},
		{name: "wrong password", credentials: &chart.Credentials{Username: "reader", Password: "nope", CA: ca.CertPEM},
			wantErr: refused("fetching index", false)},
		{name: "no password", credentials: &chart.Credentials{CA: ca.CertPEM}, wantErr: refused("fetching index", true)},
		{name: "CA not trusted", credentials: &chart.Credentials{Username: "reader", Password: "s3cret"},
			wantErr: unreachable("certificate signed by unknown authority")},
	}, func() chart.Request { return httpRequest(repo.URL, "small", "*") })
}

func TestFetcher_Fetch_httpsWithClientCertificate(t *testing.T) {
	ca := testpki.NewCA(t, "repo CA")
	client := ca.Client("kraan")
	stranger := testpki.NewCA(t, "other CA").Client("kraan")
	repo := chartrepo.NewHTTPSRepo(t, ca.ServerTLS(true), chartrepo.ChartDir("small"))
	runAuthCases(t, []authCase{
		{name: "client certificate", credentials: &chart.Credentials{CA: ca.CertPEM, Cert: client.CertPEM, Key: client.KeyPEM}},
		{name: "no client certificate", credentials: &chart.Credentials{CA: ca.CertPEM}, wantErr: unreachable("certificate required")},
		{name: "certificate of another CA", credentials: &chart.Credentials{CA: ca.CertPEM, Cert: stranger.CertPEM, Key: stranger.KeyPEM},
			// Go's client sends no certificate the server's CA list excludes.
			wantErr: unreachable("certificate required")},
	}, func() chart.Request { return httpRequest(repo.URL, "small", "*") })
}

// TestFetcher_Fetch_passCredentials serves the index on one host and the
// archives on another, both behind the same basic auth: the archive host
// gets the credentials only under spec.passCredentials.
func TestFetcher_Fetch_passCredentials(t *testing.T) {
	archives := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	archives.RequireBasicAuth("reader", "s3cret")
	index := chartrepo.NewHTTPRepo(t)
	index.ServeIndexOf(archives)
	index.RequireBasicAuth("reader", "s3cret")
	tests := []struct {
		name            string
		passCredentials bool
		wantErr         func(Gomega, error)
	}{
		{name: "credentials stay on the index host", wantErr: refused("downloading chart", true)},
		{name: "passCredentials sends them to the archive host", passCredentials: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()
			req := httpRequest(index.URL, "small", "*")
			req.Repository.PassCredentials = tt.passCredentials
			req.Repository.Credentials = &chart.Credentials{Username: "reader", Password: "s3cret"}

			res, err := fetch(t, f, req)

			if tt.wantErr != nil {
				tt.wantErr(g, err)
				g.Expect(err.Error()).To(ContainSubstring(archives.URL))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.URL).To(HavePrefix(archives.URL))
		})
	}
}

// secureOCIRequest asks for a chart of an OCI registry served over TLS.
func secureOCIRequest(registry *chartrepo.OCIRegistry) func() chart.Request {
	return func() chart.Request {
		return chart.Request{Chart: "small", Version: "*",
			Repository: &chart.Repository{URL: registry.URL(), Type: chart.RepositoryTypeOCI}}
	}
}

func TestFetcher_Fetch_ociWithTLSAndTokenAuth(t *testing.T) {
	ca := testpki.NewCA(t, "registry CA")
	registry := chartrepo.NewOCIRegistry(t, chartrepo.WithTLS(ca.ServerTLS(false), ca.ClientTLS(nil)))
	registry.RequireTokenAuth("reader", "s3cret")
	registry.Push(chartrepo.ChartDir("small"), "0.1.0")
	registry.ResetCounts()
	runAuthCases(t, []authCase{
		{name: "right password", credentials: &chart.Credentials{Username: "reader", Password: "s3cret", CA: ca.CertPEM}},
		{name: "wrong password", credentials: &chart.Credentials{Username: "reader", Password: "nope", CA: ca.CertPEM},
			wantErr: refused("listing tags", false)},
		{name: "no password", credentials: &chart.Credentials{CA: ca.CertPEM}, wantErr: refused("listing tags", true)},
		{name: "CA not trusted", credentials: &chart.Credentials{Username: "reader", Password: "s3cret"},
			wantErr: unreachable("certificate signed by unknown authority")},
	}, secureOCIRequest(registry))
	// The right password got its token from the token endpoint, not by
	// sending basic auth to the registry.
	NewWithT(t).Expect(registry.Requests(chartrepo.TokenPath)).To(BeNumerically(">=", 2))
}

func TestFetcher_Fetch_ociWithTLSAndBasicAuth(t *testing.T) {
	ca := testpki.NewCA(t, "registry CA")
	registry := chartrepo.NewOCIRegistry(t, chartrepo.WithTLS(ca.ServerTLS(false), ca.ClientTLS(nil)))
	registry.RequireBasicAuth("reader", "s3cret")
	registry.Push(chartrepo.ChartDir("small"), "0.1.0")
	runAuthCases(t, []authCase{
		{name: "right password", credentials: &chart.Credentials{Username: "reader", Password: "s3cret", CA: ca.CertPEM}},
		{name: "wrong password", credentials: &chart.Credentials{Username: "reader", Password: "nope", CA: ca.CertPEM},
			wantErr: refused("listing tags", false)},
	}, secureOCIRequest(registry))
}

func TestFetcher_Fetch_ociWithClientCertificate(t *testing.T) {
	ca := testpki.NewCA(t, "registry CA")
	client := ca.Client("kraan")
	registry := chartrepo.NewOCIRegistry(t, chartrepo.WithTLS(ca.ServerTLS(true), ca.ClientTLS(&client)))
	registry.Push(chartrepo.ChartDir("small"), "0.1.0")
	runAuthCases(t, []authCase{
		{name: "client certificate", credentials: &chart.Credentials{CA: ca.CertPEM, Cert: client.CertPEM, Key: client.KeyPEM}},
		{name: "no client certificate", credentials: &chart.Credentials{CA: ca.CertPEM}, wantErr: unreachable("certificate required")},
	}, secureOCIRequest(registry))
}

// TestOCIRegistry_tokenEndpoint checks the test registry's token flow itself,
// so that the fetcher's tests above prove something: no token, no access.
func TestOCIRegistry_tokenEndpoint(t *testing.T) {
	g := NewWithT(t)
	ca := testpki.NewCA(t, "registry CA")
	registry := chartrepo.NewOCIRegistry(t, chartrepo.WithTLS(ca.ServerTLS(false), ca.ClientTLS(nil)))
	registry.RequireTokenAuth("reader", "s3cret")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientTLS(nil)}}
	// get returns the status and the WWW-Authenticate header of a GET.
	get := func(path, user, password string) (int, string) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://"+registry.Host+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
	}

	status, challenge := get("/v2/charts/small/tags/list", "reader", "s3cret")
	g.Expect(status).To(Equal(http.StatusUnauthorized), "basic auth must not open a token registry")
	g.Expect(challenge).To(And(
		HavePrefix(`Bearer realm="https://`+registry.Host+chartrepo.TokenPath+`"`),
		ContainSubstring(`scope="repository:charts/small:pull"`)))
	status, _ = get(chartrepo.TokenPath+"?service=chartrepo", "reader", "nope")
	g.Expect(status).To(Equal(http.StatusUnauthorized))
	status, _ = get(chartrepo.TokenPath+"?service=chartrepo", "reader", "s3cret")
	g.Expect(status).To(Equal(http.StatusOK))
}
