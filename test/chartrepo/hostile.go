package chartrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Media types of a Helm chart in an OCI registry, as `helm push` writes them.
const (
	manifestMediaType = "application/vnd.oci.image.manifest.v1+json"
	configMediaType   = "application/vnd.cncf.helm.config.v1+json"
	chartMediaType    = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// endlessLimit stops an endless body, so that a client which never gives up
// cannot keep a test's server busy forever: far above any cap under test.
const endlessLimit = 4 << 30

// HostileRegistry is an OCI registry on 127.0.0.1 that lies to its clients,
// to prove they bound what they read: each chart (repository charts/<name>)
// is given one behaviour. It counts every byte of the bodies it sends, so a
// test can assert how much a client actually read, without timing or memory
// measurements. It is safe for concurrent use.
type HostileRegistry struct {
	// Host is the registry's host:port.
	Host string

	server   *httptest.Server
	inFlight atomic.Int64
	mu       sync.Mutex
	charts   map[string]hostileChart
	sent     map[string]int64 // by chart name
}

// hostileChart is how the registry answers for one chart.
type hostileChart struct {
	// tags is the tag list's one page; with endlessPages every page links to
	// another, each with tagsPerPage fresh tags.
	tags         []string
	endlessPages bool
	tagsPerPage  int
	// manifest is served for every tag; manifestSize, when set, is declared
	// instead of its real size, and its GET body is endless.
	manifest     []byte
	manifestSize int64
	// claimed, when set, is the digest and size a HEAD of any tag answers
	// with: another registry's manifest, whose content this one does not have.
	claimed *Pushed
	// layerDeclared is the chart layer's size in the manifest; its GET body
	// is endless, whatever it declares.
	layerDeclared int64
}

// NewHostileRegistry starts a registry with no charts; it stops when the
// test ends.
func NewHostileRegistry(tb testing.TB) *HostileRegistry {
	tb.Helper()
	r := &HostileRegistry{charts: map[string]hostileChart{}, sent: map[string]int64{}}
	r.server = httptest.NewUnstartedServer(http.HandlerFunc(r.serveHTTP))
	// Clients hanging up on endless bodies are what the tests are about.
	r.server.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.server.Start()
	r.Host = strings.TrimPrefix(r.server.URL, "http://")
	tb.Cleanup(r.server.Close)
	return r
}

// URL is the repository URL for a HelmRepository of type oci (insecure: the
// registry speaks plain HTTP).
func (r *HostileRegistry) URL() string {
	return "oci://" + r.Host + "/" + ociRepository
}

// DeclareLayer serves chart name at version with a manifest whose chart
// layer declares size bytes, and an endless body for that layer whatever it
// declares: a huge size a client must refuse up front, or a small one it
// must not read past.
func (r *HostileRegistry) DeclareLayer(name, version string, size int64) {
	r.set(name, hostileChart{tags: []string{version}, layerDeclared: size})
}

// DeclareHugeManifest serves chart name at version with a manifest that
// declares size bytes, and an endless body for it.
func (r *HostileRegistry) DeclareHugeManifest(name, version string, size int64) {
	r.set(name, hostileChart{tags: []string{version}, manifestSize: size, layerDeclared: 1024})
}

// ServeEndlessTags serves chart name's tag list as pages that never end, each
// with tagsPerPage new tags (0: empty pages) and a Link to the next.
func (r *HostileRegistry) ServeEndlessTags(name string, tagsPerPage int) {
	r.set(name, hostileChart{endlessPages: true, tagsPerPage: tagsPerPage})
}

// ClaimManifest serves chart name at version as the manifest of other,
// pushed to another registry: a HEAD of the tag answers with other's digest,
// size and media type, while this registry has none of its content. A
// client that trusts a cache keyed on the digest alone installs other's
// chart from here.
func (r *HostileRegistry) ClaimManifest(name, version string, other Pushed) {
	r.set(name, hostileChart{tags: []string{version}, claimed: &other})
}

func (r *HostileRegistry) set(name string, c hostileChart) {
	if c.claimed == nil && !c.endlessPages {
		c.manifest = hostileManifest(c.layerDeclared)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.charts[name] = c
}

// hostileManifest is a Helm chart manifest whose layer declares size bytes.
func hostileManifest(layerSize int64) []byte {
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	}
	config := []byte(`{"name":"hostile","version":"1.0.0","apiVersion":"v2"}`)
	data, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{
		SchemaVersion: 2,
		MediaType:     manifestMediaType,
		Config:        descriptor{MediaType: configMediaType, Digest: sha256Digest(config), Size: int64(len(config))},
		Layers: []descriptor{{MediaType: chartMediaType, Size: layerSize,
			Digest: sha256Digest([]byte("a layer this registry never sends in full"))}},
	})
	if err != nil {
		panic(err)
	}
	return data
}

func sha256Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Sent is how many body bytes the registry sent for chart name (written to
// the connection): an upper bound of what its clients read.
func (r *HostileRegistry) Sent(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[name]
}

// InFlight is how many requests the registry is still answering. An endless
// body ends when its client hangs up: once InFlight is 0, Sent is final.
func (r *HostileRegistry) InFlight() int64 {
	return r.inFlight.Load()
}

func (r *HostileRegistry) serveHTTP(w http.ResponseWriter, req *http.Request) {
	r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	name, kind, ok := r.parsePath(req.URL.Path)
	if req.URL.Path == "/v2/" || req.URL.Path == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	r.mu.Lock()
	c, known := r.charts[name]
	r.mu.Unlock()
	if !ok || !known {
		http.NotFound(w, req)
		return
	}
	cw := &countingWriter{ResponseWriter: w, count: func(n int) { r.addSent(name, n) }}
	switch kind {
	case "tags":
		r.serveTags(cw, req, name, c)
	case "manifests":
		r.serveManifest(cw, req, c)
	case "blobs":
		writeEndless(cw, req)
	default:
		http.NotFound(w, req)
	}
}

// parsePath reads /v2/charts/<name>/<kind>/… into name and kind.
func (r *HostileRegistry) parsePath(p string) (name, kind string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/v2/"+ociRepository+"/")
	if !ok {
		return "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

func (r *HostileRegistry) addSent(name string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent[name] += int64(n)
}

func (r *HostileRegistry) serveTags(w http.ResponseWriter, req *http.Request, name string, c hostileChart) {
	tags := c.tags
	if c.endlessPages {
		page := len(req.URL.Query().Get("last"))
		tags = make([]string, c.tagsPerPage)
		for i := range tags {
			tags[i] = fmt.Sprintf("0.%d.%d", page, i)
		}
		// The next page's "last" grows by one byte a page: pages never repeat.
		next := fmt.Sprintf("/v2/%s/%s/tags/list?last=%s", ociRepository, name, strings.Repeat("x", page+1))
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"name": ociRepository + "/" + name, "tags": tags})
}

func (r *HostileRegistry) serveManifest(w http.ResponseWriter, req *http.Request, c hostileChart) {
	w.Header().Set("Content-Type", manifestMediaType)
	switch {
	case c.claimed != nil:
		if req.Method != http.MethodHead {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Docker-Content-Digest", c.claimed.ManifestDigest)
		w.Header().Set("Content-Length", fmt.Sprint(c.claimed.ManifestSize))
	case c.manifestSize > 0:
		w.Header().Set("Docker-Content-Digest", sha256Digest(c.manifest))
		if req.Method == http.MethodHead {
			w.Header().Set("Content-Length", fmt.Sprint(c.manifestSize))
			return
		}
		writeEndless(w, req)
	default:
		w.Header().Set("Docker-Content-Digest", sha256Digest(c.manifest))
		w.Header().Set("Content-Length", fmt.Sprint(len(c.manifest)))
		if req.Method != http.MethodHead {
			_, _ = w.Write(c.manifest)
		}
	}
}

// writeEndless streams bytes until the client hangs up (or endlessLimit).
func writeEndless(w http.ResponseWriter, req *http.Request) {
	chunk := make([]byte, 32<<10)
	w.WriteHeader(http.StatusOK)
	for written := 0; written < endlessLimit; written += len(chunk) {
		if req.Context().Err() != nil {
			return
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// countingWriter counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	count func(int)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.count(n)
	return n, err
}
