package chart_test

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

func TestIsTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "unreachable", err: &chart.UnreachableError{URL: "u", Err: errors.New("refused")}, want: true},
		{name: "server error", err: &chart.StatusError{URL: "u", StatusCode: 502}, want: true},
		{name: "rate limited", err: &chart.StatusError{URL: "u", StatusCode: 429}, want: true},
		{name: "not found", err: &chart.StatusError{URL: "u", StatusCode: 404}},
		{name: "auth", err: &chart.AuthError{URL: "u", StatusCode: 403}},
		{name: "version", err: &chart.VersionNotFoundError{Chart: "c", Constraint: "1"}},
		{name: "plain", err: errors.New("x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(chart.IsTransient(tt.err)).To(Equal(tt.want))
		})
	}
}

// A repository's index can point anywhere; its credentials must not follow.
func TestFetcher_Fetch_credentialsStayOnTheRepositoryHost(t *testing.T) {
	g := NewWithT(t)
	a, err := chartrepo.Package(chartrepo.ChartDir("small"), "")
	g.Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var authorization []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		authorization = append(authorization, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write(a.Data)
	}))
	defer other.Close()
	index := repo.NewIndexFile()
	g.Expect(index.MustAdd(loadTestChart(t, "small").Chart.Metadata, a.FileName(), other.URL+"/charts", a.Digest)).To(Succeed())
	indexYAML, err := yaml.Marshal(index)
	g.Expect(err).NotTo(HaveOccurred())
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(indexYAML)
	}))
	defer private.Close()
	f, _ := newFetcher()
	req := httpRequest(private.URL, "small", "*")
	req.Repository.Credentials = &chart.Credentials{Username: "u", Password: "p"}

	res, err := fetch(t, f, req)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.URL).To(Equal(other.URL + "/charts/" + a.FileName()))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(authorization).To(Equal([]string{""}))
}

func TestFetcher_Fetch_trustsCAFromSecret(t *testing.T) {
	repoServer := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	repoServer.UseRelativeURLs(true)
	target, err := url.Parse(repoServer.URL)
	if err != nil {
		t.Fatal(err)
	}
	tlsServer := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	defer tlsServer.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsServer.Certificate().Raw})
	tests := []struct {
		name        string
		credentials *chart.Credentials
		wantErr     bool
	}{
		{name: "CA from the secret", credentials: &chart.Credentials{CA: ca}},
		{name: "system roots only", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()
			req := httpRequest(tlsServer.URL, "small", "*")
			req.Repository.Credentials = tt.credentials

			res, err := fetch(t, f, req)

			if tt.wantErr {
				var unreachable *chart.UnreachableError
				g.Expect(errors.As(err, &unreachable)).To(BeTrue(), "got %v", err)
				g.Expect(err.Error()).To(ContainSubstring("certificate"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.URL).To(HavePrefix(tlsServer.URL))
		})
	}
}
