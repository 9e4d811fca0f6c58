package chartrepo

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/registry"
)

// ociRepository is the repository path under which charts are pushed: a
// chart small is at <host>/charts/small.
const ociRepository = "charts"

// OCIRegistry is an in-memory OCI registry (go-containerregistry's
// pkg/registry) served over plain HTTP on 127.0.0.1. Charts are pushed to it
// with Helm's own registry client, so their manifests are what `helm push`
// makes. It is safe for concurrent use.
type OCIRegistry struct {
	// Host is the registry's host:port.
	Host string

	tb       testing.TB
	server   *httptest.Server
	handler  http.Handler
	mu       sync.Mutex
	username string
	password string
	requests map[string]int
}

// Pushed describes a chart pushed to an OCIRegistry.
type Pushed struct {
	Archive
	// Ref is the chart's reference with its tag, without the oci:// scheme.
	Ref string
	// ManifestDigest is the digest of the OCI manifest ("sha256:…").
	ManifestDigest string
	// BlobPath is the registry path of the chart layer, for Requests.
	BlobPath string
}

// NewOCIRegistry starts an empty registry; it stops when the test ends.
func NewOCIRegistry(tb testing.TB) *OCIRegistry {
	tb.Helper()
	r := &OCIRegistry{
		tb: tb,
		// The registry logs every request; tests want quiet output.
		handler:  ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
		requests: map[string]int{},
	}
	r.server = httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	r.Host = strings.TrimPrefix(r.server.URL, "http://")
	tb.Cleanup(r.server.Close)
	return r
}

// URL is the repository URL for a HelmRepository of type oci, holding every
// chart pushed: oci://<host>/charts.
func (r *OCIRegistry) URL() string {
	return "oci://" + r.Host + "/" + ociRepository
}

// RequireBasicAuth makes every request need these credentials; others get 401
// with a Basic challenge, which registry clients answer with the credentials.
func (r *OCIRegistry) RequireBasicAuth(username, password string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.username, r.password = username, password
}

// Push packages the chart directory once per version given (none: the
// version of its Chart.yaml) and pushes each with Helm's registry client.
func (r *OCIRegistry) Push(dir string, versions ...string) []Pushed {
	r.tb.Helper()
	if len(versions) == 0 {
		versions = []string{""}
	}
	client := r.client()
	pushed := make([]Pushed, 0, len(versions))
	for _, v := range versions {
		a, err := Package(dir, v)
		if err != nil {
			r.tb.Fatalf("chartrepo: %v", err)
		}
		pushed = append(pushed, r.push(client, a))
	}
	return pushed
}

func (r *OCIRegistry) push(client *registry.Client, a *Archive) Pushed {
	r.tb.Helper()
	ref := fmt.Sprintf("%s/%s/%s:%s", r.Host, ociRepository, a.Name, a.Version)
	res, err := client.Push(a.Data, ref)
	if err != nil {
		r.tb.Fatalf("chartrepo: pushing %s: %v", ref, err)
	}
	return Pushed{
		Archive:        *a,
		Ref:            ref,
		ManifestDigest: res.Manifest.Digest,
		BlobPath:       fmt.Sprintf("/v2/%s/%s/blobs/%s", ociRepository, a.Name, res.Chart.Digest),
	}
}

// client is Helm's registry client for plain HTTP, with the registry's
// credentials if it requires some, and a credentials file of its own so that
// the user's Helm and Docker logins play no part.
func (r *OCIRegistry) client() *registry.Client {
	r.tb.Helper()
	r.mu.Lock()
	user, pass := r.username, r.password
	r.mu.Unlock()
	opts := []registry.ClientOption{
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(r.tb.TempDir(), "registry.json")),
	}
	if user != "" {
		opts = append(opts, registry.ClientOptBasicAuth(user, pass))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		r.tb.Fatalf("chartrepo: registry client: %v", err)
	}
	return client
}

// Requests is how many requests for path (e.g. Pushed.BlobPath) the registry
// received, of any method.
func (r *OCIRegistry) Requests(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

// ResetCounts sets every request count back to zero.
func (r *OCIRegistry) ResetCounts() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = map[string]int{}
}

// Close stops the server.
func (r *OCIRegistry) Close() {
	r.server.Close()
}

func (r *OCIRegistry) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if !r.authorize(req) {
		w.Header().Set("WWW-Authenticate", `Basic realm="chartrepo"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	r.handler.ServeHTTP(w, req)
}

// authorize counts the request and checks its credentials.
func (r *OCIRegistry) authorize(req *http.Request) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[req.URL.Path]++
	if r.username == "" {
		return true
	}
	user, pass, ok := req.BasicAuth()
	return ok && user == r.username && pass == r.password
}
