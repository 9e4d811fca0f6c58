package chart_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// TestFetcher_Fetch_hostileRegistryIsCappedBeforeReading: a registry that
// declares a huge layer or manifest, lies about a layer's size or pages its
// tag list without end is refused by the Fetcher's own caps, with an error
// naming the cap's flag, and the bytes it actually sent stay bounded.
func TestFetcher_Fetch_hostileRegistryIsCappedBeforeReading(t *testing.T) {
	hostile := chartrepo.NewHostileRegistry(t)
	hostile.DeclareLayer("huge-layer", "1.0.0", 2<<30)
	hostile.DeclareLayer("lying-layer", "1.0.0", 1024)
	hostile.DeclareHugeManifest("huge-manifest", "1.0.0", 2<<30)
	hostile.ServeEndlessTags("endless-tags", 1000)
	hostile.ServeEndlessTags("endless-pages", 0)
	ref := func(name string) string { return "oci://" + hostile.Host + "/charts/" + name }
	tests := []struct {
		chart   string
		message string
		// maxSent bounds what the registry sent; 0: below the cap at stake.
		maxSent int64
	}{
		{chart: "huge-layer", maxSent: 64 << 10,
			message: "chart layer of " + ref("huge-layer") + ":1.0.0 declares 2 GiB, over the 10 MiB limit (--max-chart-size)"},
		// Reading stops at the declared size; what is in flight in socket
		// buffers when the client hangs up is all the server gets to send.
		{chart: "lying-layer", maxSent: 32 << 20,
			message: "chart layer of " + ref("lying-layer") + ":1.0.0: the registry sent more, not the 1 KiB its descriptor declares"},
		{chart: "huge-manifest", maxSent: 64 << 10,
			message: "manifest of " + ref("huge-manifest") + ":1.0.0 declares 2 GiB, over the 2 MiB limit (--max-oci-manifest-size)"},
		{chart: "endless-tags", maxSent: 1 << 20,
			message: "tag list of " + ref("endless-tags") + " has more than 10000 tags, the limit (--max-oci-tags)"},
		{chart: "endless-pages", maxSent: 64 << 10,
			message: "tag list of " + ref("endless-pages") + " has more than 100 pages, the limit (--max-oci-tag-pages)"},
	}
	for _, tt := range tests {
		t.Run(tt.chart, func(t *testing.T) {
			g := NewWithT(t)
			f, _ := newFetcher()

			_, err := fetch(t, f, ociRequest(hostile.URL(), tt.chart, "*"))

			g.Expect(err).To(MatchError(ContainSubstring(tt.message)))
			g.Expect(chart.IsTerminal(err)).To(BeTrue(), "a cap is the user's to raise, not a retry's: %v", err)
			// An endless body ends when the client hangs up; then the count
			// is final.
			g.Eventually(hostile.InFlight).WithTimeout(time.Minute).Should(BeZero())
			t.Logf("the registry sent %d bytes for %s (bound %d)", hostile.Sent(tt.chart), tt.chart, tt.maxSent)
			g.Expect(hostile.Sent(tt.chart)).To(BeNumerically("<", tt.maxSent))
		})
	}
}

// TestFetcher_Fetch_httpCapsAreCheckedBeforeAndWhileReading: an index or
// archive over its cap is refused from its Content-Length before reading,
// and cut off at the cap when the server sends no length.
func TestFetcher_Fetch_httpCapsAreCheckedBeforeAndWhileReading(t *testing.T) {
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	// A server that streams an endless index without a Content-Length.
	var sent atomic.Int64
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		chunk := []byte(strings.Repeat("# padding\n", 3000))
		for i := 0; i < 100000 && req.Context().Err() == nil; i++ {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(endless.Close)
	tests := []struct {
		name, url, message string
		opts               chart.Options
	}{
		{name: "index declared", url: repo.URL, opts: chart.Options{MaxIndexSize: 100},
			message: "index " + repo.IndexURL() + " declares"},
		{name: "index sent", url: endless.URL, opts: chart.Options{MaxIndexSize: 100},
			message: "index " + endless.URL + "/index.yaml is larger than the 100 B limit (--max-index-size)"},
		{name: "archive declared", url: repo.URL, opts: chart.Options{MaxChartSize: 100},
			message: "chart archive " + repo.URL + "/charts/small-0.1.0.tgz declares"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := chart.NewFetcher(tt.opts)
			_, err := fetch(t, f, httpRequest(tt.url, "small", "*"))
			var limit *chart.LimitError
			g.Expect(errors.As(err, &limit)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.message))
			g.Expect(chart.IsTerminal(err)).To(BeTrue())
		})
	}
	NewWithT(t).Expect(sent.Load()).To(BeNumerically("<", 32<<20), "the endless index was read to its end")
}
