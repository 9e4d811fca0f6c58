package chartrepo_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// response is what tests look at in an HTTP response, read and closed.
type response struct {
	StatusCode int
	Header     http.Header
}

func get(t *testing.T, url string, header http.Header) (response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{StatusCode: resp.StatusCode, Header: resp.Header}, body
}

func TestChartDir_findsTestCharts(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{"small", "realistic", "withdeps"} {
		g.Expect(filepath.Join(chartrepo.ChartDir(name), "Chart.yaml")).To(BeARegularFile())
	}
}

func TestPackage_overridesVersion(t *testing.T) {
	g := NewWithT(t)

	a, err := chartrepo.Package(chartrepo.ChartDir("small"), "0.2.0")

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Name).To(Equal("small"))
	g.Expect(a.Version).To(Equal("0.2.0"))
	g.Expect(a.FileName()).To(Equal("small-0.2.0.tgz"))
	g.Expect(a.Digest).To(HaveLen(64))
}

func TestHTTPRepo_servesIndexOfEveryVersion(t *testing.T) {
	g := NewWithT(t)
	r := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("realistic"))
	archives := r.Add(chartrepo.ChartDir("small"), "0.1.0", "0.2.0")

	resp, body := get(t, r.IndexURL(), nil)

	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var index repo.IndexFile
	g.Expect(yaml.Unmarshal(body, &index)).To(Succeed())
	g.Expect(index.Entries).To(HaveKey("realistic"))
	g.Expect(index.Entries["small"]).To(HaveLen(2))
	small := index.Entries["small"][0]
	g.Expect(small.Version).To(Equal("0.2.0"))
	g.Expect(small.Digest).To(Equal(archives[1].Digest))
	g.Expect(small.URLs).To(Equal([]string{r.URL + r.ChartPath("small", "0.2.0")}))

	resp, body = get(t, small.URLs[0], nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(Equal(archives[1].Data))
	g.Expect(r.Requests(chartrepo.IndexPath)).To(Equal(1))
	g.Expect(r.Requests(r.ChartPath("small", "0.2.0"))).To(Equal(1))
}

func TestHTTPRepo_answersConditionalRequests(t *testing.T) {
	g := NewWithT(t)
	r := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	resp, _ := get(t, r.IndexURL(), nil)
	etag := resp.Header.Get("ETag")
	g.Expect(etag).NotTo(BeEmpty())

	resp, _ = get(t, r.IndexURL(), http.Header{"If-None-Match": {etag}})
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotModified))
	g.Expect(r.NotModified(chartrepo.IndexPath)).To(Equal(1))

	// A new version changes the index and its ETag.
	r.Add(chartrepo.ChartDir("small"), "0.3.0")
	resp, _ = get(t, r.IndexURL(), http.Header{"If-None-Match": {etag}})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(r.Requests(chartrepo.IndexPath)).To(Equal(3))
	g.Expect(r.NotModified(chartrepo.IndexPath)).To(Equal(1))
}

func TestHTTPRepo_requireBasicAuth(t *testing.T) {
	g := NewWithT(t)
	r := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	r.RequireBasicAuth("user", "pass")

	resp, _ := get(t, r.IndexURL(), nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(resp.Header.Get("WWW-Authenticate")).To(HavePrefix("Basic"))

	req := http.Header{}
	req.Set("Authorization", "Basic dXNlcjpwYXNz") // user:pass
	resp, _ = get(t, r.IndexURL(), req)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

func TestHTTPRepo_tamperKeepsAValidArchive(t *testing.T) {
	g := NewWithT(t)
	r := chartrepo.NewHTTPRepo(t)
	a := r.Add(chartrepo.ChartDir("small"))[0]
	r.Tamper("small", "0.1.0")

	_, body := get(t, r.URL+r.ChartPath("small", "0.1.0"), nil)

	g.Expect(body).NotTo(Equal(a.Data))
	g.Expect(body[:2]).To(Equal([]byte{0x1f, 0x8b}), "still gzip")
}

func TestOCIRegistry_pushedChartsCanBePulled(t *testing.T) {
	g := NewWithT(t)
	r := chartrepo.NewOCIRegistry(t)
	pushed := r.Push(chartrepo.ChartDir("small"), "0.1.0", "0.2.0")
	g.Expect(r.URL()).To(Equal("oci://" + r.Host + "/charts"))

	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	g.Expect(err).NotTo(HaveOccurred())
	tags, err := client.Tags(r.Host + "/charts/small")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(Equal([]string{"0.2.0", "0.1.0"}))

	res, err := client.Pull(pushed[1].Ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Manifest.Digest).To(Equal(pushed[1].ManifestDigest))
	g.Expect(res.Chart.Data).To(Equal(pushed[1].Data))
	g.Expect(r.Requests(pushed[1].BlobPath)).To(BeNumerically(">=", 1))
}

func TestOCIRegistry_requireBasicAuth(t *testing.T) {
	g := NewWithT(t)
	r := chartrepo.NewOCIRegistry(t)
	r.RequireBasicAuth("user", "pass")
	pushed := r.Push(chartrepo.ChartDir("small"))

	anonymous, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = anonymous.Pull(pushed[0].Ref)
	g.Expect(err).To(HaveOccurred())
}
