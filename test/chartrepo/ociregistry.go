package chartrepo

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
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
	"helm.sh/helm/v4/pkg/registry"
)

// ociRepository is the repository path under which charts are pushed: a
// chart small is at <host>/charts/small.
const ociRepository = "charts"

// OCIRegistry is an in-memory OCI registry (go-containerregistry's
// pkg/registry) served on 127.0.0.1, over plain HTTP or, with WithTLS,
// HTTPS. Charts are pushed to it with Helm's own registry client, so their
// manifests are what `helm push` makes. It can demand basic auth, or bearer
// tokens from a token server of its own (the Docker registry token flow). It
// is safe for concurrent use.
type OCIRegistry struct {
	// Host is the registry's host:port.
	Host string

	tb        testing.TB
	server    *httptest.Server
	handler   http.Handler
	clientTLS *tls.Config
	mu        sync.Mutex
	username  string
	password  string
	tokenAuth bool
	tokens    map[string]bool
	requests  map[string]int
}

// OCIOption configures an OCIRegistry when it starts.
type OCIOption func(*ociConfig)

type ociConfig struct {
	serverTLS, clientTLS *tls.Config
}

// WithTLS serves the registry over HTTPS with serverTLS; clientTLS is what
// the registry's own pushes use to connect (trusting its CA, presenting a
// client certificate if serverTLS demands one).
func WithTLS(serverTLS, clientTLS *tls.Config) OCIOption {
	return func(c *ociConfig) { c.serverTLS, c.clientTLS = serverTLS, clientTLS }
}

// Pushed describes a chart pushed to an OCIRegistry.
type Pushed struct {
	Archive
	// Ref is the chart's reference with its tag, without the oci:// scheme.
	Ref string
	// ManifestDigest is the digest of the OCI manifest ("sha256:…").
	ManifestDigest string
	// ManifestSize is the manifest's size in bytes.
	ManifestSize int64
	// BlobPath is the registry path of the chart layer, for Requests.
	BlobPath string
}

// NewOCIRegistry starts an empty registry; it stops when the test ends.
func NewOCIRegistry(tb testing.TB, opts ...OCIOption) *OCIRegistry {
	tb.Helper()
	var cfg ociConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	r := &OCIRegistry{
		tb: tb,
		// The registry logs every request; tests want quiet output.
		handler:   ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
		clientTLS: cfg.clientTLS,
		tokens:    map[string]bool{},
		requests:  map[string]int{},
	}
	r.server = httptest.NewUnstartedServer(http.HandlerFunc(r.serveHTTP))
	// Refused TLS handshakes are what some tests are about, not noise.
	r.server.Config.ErrorLog = log.New(io.Discard, "", 0)
	if cfg.serverTLS != nil {
		r.server.TLS = cfg.serverTLS
		r.server.StartTLS()
	} else {
		r.server.Start()
	}
	r.Host = strings.TrimPrefix(strings.TrimPrefix(r.server.URL, "http://"), "https://")
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
	r.username, r.password, r.tokenAuth = username, password, false
}

// RequireTokenAuth makes every request need a bearer token, as Docker Hub,
// Harbor or GitLab do: a request without one gets 401 with a Bearer
// challenge naming the registry's token endpoint (TokenPath), which issues a
// token for these basic auth credentials and refuses others.
func (r *OCIRegistry) RequireTokenAuth(username, password string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.username, r.password, r.tokenAuth = username, password, true
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

// PushTag packages the chart directory at version and pushes it under tag,
// which need not be the version ("latest", "stable"), as Flux's
// OCIRepository users publish charts.
func (r *OCIRegistry) PushTag(dir, version, tag string) Pushed {
	r.tb.Helper()
	a, err := Package(dir, version)
	if err != nil {
		r.tb.Fatalf("chartrepo: %v", err)
	}
	return r.pushAs(r.client(), a, tag)
}

func (r *OCIRegistry) push(client *registry.Client, a *Archive) Pushed {
	r.tb.Helper()
	return r.pushAs(client, a, a.Version)
}

func (r *OCIRegistry) pushAs(client *registry.Client, a *Archive, tag string) Pushed {
	r.tb.Helper()
	ref := fmt.Sprintf("%s/%s/%s:%s", r.Host, ociRepository, a.Name, tag)
	res, err := client.Push(a.Data, ref, registry.PushOptStrictMode(tag == a.Version))
	if err != nil {
		r.tb.Fatalf("chartrepo: pushing %s: %v", ref, err)
	}
	return Pushed{
		Archive:        *a,
		Ref:            ref,
		ManifestDigest: res.Manifest.Digest,
		ManifestSize:   res.Manifest.Size,
		BlobPath:       fmt.Sprintf("/v2/%s/%s/blobs/%s", ociRepository, a.Name, res.Chart.Digest),
	}
}

// client is Helm's registry client, trusting the registry's TLS
// configuration or using plain HTTP, with the registry's credentials if it
// requires some, and a credentials file of its own so that the user's Helm
// and Docker logins play no part.
func (r *OCIRegistry) client() *registry.Client {
	r.tb.Helper()
	r.mu.Lock()
	user, pass := r.username, r.password
	r.mu.Unlock()
	opts := []registry.ClientOption{
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(r.tb.TempDir(), "registry.json")),
	}
	if r.clientTLS != nil {
		opts = append(opts, registry.ClientOptHTTPClient(&http.Client{
			Transport: &http.Transport{TLSClientConfig: r.clientTLS, Proxy: http.ProxyFromEnvironment},
		}))
	} else {
		opts = append(opts, registry.ClientOptPlainHTTP())
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

// TokenPath is where a registry under RequireTokenAuth issues tokens.
const TokenPath = "/token"

// tokenService is the service name of the registry's Bearer challenges.
const tokenService = "chartrepo"

func (r *OCIRegistry) serveHTTP(w http.ResponseWriter, req *http.Request) {
	tokenAuth := r.count(req.URL.Path)
	switch {
	case tokenAuth && req.URL.Path == TokenPath:
		r.serveToken(w, req)
	case tokenAuth && !r.hasToken(req):
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s",service="%s",scope="%s"`,
			r.server.URL+TokenPath, tokenService, scopeOf(req)))
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
	case !tokenAuth && !r.hasBasicAuth(req):
		w.Header().Set("WWW-Authenticate", `Basic realm="chartrepo"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	default:
		r.handler.ServeHTTP(w, req)
	}
}

// count counts the request and says whether token auth is on.
func (r *OCIRegistry) count(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[path]++
	return r.tokenAuth
}

// hasBasicAuth checks basic auth credentials, if the registry wants any.
func (r *OCIRegistry) hasBasicAuth(req *http.Request) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.username == "" {
		return true
	}
	user, pass, ok := req.BasicAuth()
	return ok && user == r.username && pass == r.password
}

// hasToken checks the request carries a token the token endpoint issued.
func (r *OCIRegistry) hasToken(req *http.Request) bool {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	r.mu.Lock()
	defer r.mu.Unlock()
	return ok && r.tokens[token]
}

// serveToken is the token endpoint: GET with basic auth and the challenge's
// service and scope, answered with a fresh random token.
func (r *OCIRegistry) serveToken(w http.ResponseWriter, req *http.Request) {
	if req.URL.Query().Get("service") != tokenService {
		http.Error(w, "unknown service", http.StatusBadRequest)
		return
	}
	user, pass, ok := req.BasicAuth()
	r.mu.Lock()
	valid := ok && user == r.username && pass == r.password
	r.mu.Unlock()
	if !valid {
		w.Header().Set("WWW-Authenticate", `Basic realm="chartrepo token"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"invalid credentials"}]}`, http.StatusUnauthorized)
		return
	}
	buf := make([]byte, 16)
	if _, err := rand.Read(buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	token := hex.EncodeToString(buf)
	r.mu.Lock()
	r.tokens[token] = true
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": token, "access_token": token, "expires_in": 300})
}

// scopeOf is the scope a request needs, as a Docker registry would name it:
// "repository:charts/small:pull" for reads, ":pull,push" for writes.
func scopeOf(req *http.Request) string {
	rest, ok := strings.CutPrefix(req.URL.Path, "/v2/")
	if !ok {
		return ""
	}
	name := rest
	for _, marker := range []string{"/manifests/", "/blobs/", "/tags/"} {
		if i := strings.Index(rest, marker); i >= 0 {
			name = rest[:i]
			break
		}
	}
	if name == "" || name == rest {
		return ""
	}
	actions := "pull"
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		actions = "pull,push"
	}
	return "repository:" + name + ":" + actions
}
