package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// entry describes one tar entry; the zero typeflag means a regular file.
type entry struct {
	name     string
	body     string
	typeflag byte
	linkname string
	mode     int64
}

// file, dir and symlink are entry shorthands.
func file(name, body string) entry { return entry{name: name, body: body} }
func dir(name string) entry        { return entry{name: name, typeflag: tar.TypeDir} }
func symlink(name, target string) entry {
	return entry{name: name, typeflag: tar.TypeSymlink, linkname: target}
}

// tarball builds a gzip-compressed tarball in memory. Names are written as
// given: archive/tar does not sanitise them, which lets tests craft hostile
// archives.
func tarball(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := tw.WriteHeader(header(e)); err != nil {
			t.Fatalf("writing header %q: %v", e.name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("writing body %q: %v", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func header(e entry) *tar.Header {
	h := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.linkname, Mode: e.mode}
	if h.Typeflag == 0 {
		h.Typeflag = tar.TypeReg
	}
	if h.Mode == 0 {
		h.Mode = 0o644
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
	}
	if h.Typeflag == tar.TypeReg {
		h.Size = int64(len(e.body))
	}
	return h
}

// sha256Of returns b's digest in Flux's "sha256:<hex>" form.
func sha256Of(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// artifactServer serves tarballs like source-controller and counts requests.
type artifactServer struct {
	*httptest.Server
	requests atomic.Int32
	started  chan string // receives the path of each held response once half is sent

	mu    sync.Mutex
	files map[string][]byte
	gate  chan struct{} // when set, responses wait until it is closed
	hosts []string
}

func newArtifactServer(t *testing.T) *artifactServer {
	t.Helper()
	s := &artifactServer{files: map[string][]byte{}, started: make(chan string, 64)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *artifactServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	body, ok := s.files[r.URL.Path]
	gate := s.gate
	s.hosts = append(s.hosts, r.Host)
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if gate != nil {
		// Send half the body first, so the client is mid-download (its
		// temporary file exists) while the test holds the response.
		half := len(body) / 2
		_, _ = w.Write(body[:half])
		w.(http.Flusher).Flush()
		body = body[half:]
		s.notifyStarted(r.URL.Path)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	_, _ = w.Write(body)
}

// notifyStarted tells a waiting test that a held response is under way.
func (s *artifactServer) notifyStarted(path string) {
	select {
	case s.started <- path:
	default:
	}
}

// add serves body at /<kind>/<name>.tar.gz and returns the matching
// Artifact, as source-controller would publish it.
func (s *artifactServer) add(name string, body []byte) Artifact {
	p := "/gitrepository/flux-system/" + name + ".tar.gz"
	s.mu.Lock()
	s.files[p] = body
	s.mu.Unlock()
	size := int64(len(body))
	return Artifact{URL: s.URL + p, Revision: "main@sha1:" + name, Digest: sha256Of(body), Size: &size}
}

// hold makes responses wait until the returned function is called.
func (s *artifactServer) hold() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// lastHost is the Host header of the latest request.
func (s *artifactServer) lastHost() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.hosts) == 0 {
		return ""
	}
	return s.hosts[len(s.hosts)-1]
}

// fakeClock replaces Store.now so GC ages can be tested without sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTestStore returns a Store rooted in a fresh "cache" directory below a
// parent the test can inspect for escapes, with a fake clock.
func newTestStore(t *testing.T, opts Options) (*Store, *fakeClock) {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "cache"), opts)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = clock.now
	return s, clock
}

// inflightCount is how many Fetch/ensure calls hold d.
func (s *Store) inflightCount(d string) int {
	pd, err := parseDigest(d)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[pd.key()]
}

// entries lists the names in dir, failing the test on error.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// keyOf is the directory name of a "sha256:<hex>" digest.
func keyOf(d string) string {
	pd, err := parseDigest(d)
	if err != nil {
		panic(err)
	}
	return pd.key()
}

// gzipBytes compresses b.
func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
