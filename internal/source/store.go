package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Defaults applied by New to zero Options fields.
const (
	// DefaultTimeout bounds one download. Kraan used 15s (SC_TIMEOUT); a
	// minute leaves room for large OCI artifacts on a busy source-controller.
	DefaultTimeout = time.Minute
	// DefaultMaxUntarBytes matches fluxcd/pkg/tar's DefaultMaxUntarSize, the
	// limit Flux's own consumers apply.
	DefaultMaxUntarBytes int64 = 100 << 20
	// DefaultMaxFiles bounds inode usage by archives of many tiny files; far
	// above what an add-on repository or a chart holds.
	DefaultMaxFiles = 20000
	// DefaultMaxFileBytes bounds each extracted file. What consumers read
	// from an artifact they read a file at a time and whole (a manifest, a
	// values file), so one file is what one read may cost them; add-on
	// repositories hold manifests, the largest of which (CRD bundles) are a
	// few MiB, and Git hosts warn about files from 50 MiB.
	DefaultMaxFileBytes int64 = 16 << 20
)

// Flags of the operator that set Options' limits; a TooLargeError names the
// one to raise.
const (
	FlagMaxArtifactSize     = "--max-artifact-size"
	FlagMaxArtifactFileSize = "--max-artifact-file-size"
	FlagMaxArtifactFiles    = "--max-artifact-files"
	// DefaultGCMinAge is how long a directory stays protected from GC after a
	// Fetch returned it: longer than any reconcile reads its tree.
	DefaultGCMinAge = 10 * time.Minute
)

const (
	tmpPrefix    = ".tmp-"     // downloads and extractions in progress
	markerSuffix = ".verified" // <key>.verified, written after publishing
)

// Options configures a Store. The zero value is valid.
type Options struct {
	// HostOverride replaces the host[:port] of every artifact URL, for runs
	// outside the cluster that reach source-controller through a
	// port-forward (Kraan's SC_HOST), e.g. "127.0.0.1:9090".
	HostOverride string
	// Timeout bounds one download; default DefaultTimeout.
	Timeout time.Duration
	// MaxDownloadBytes bounds the compressed tarball; default MaxUntarBytes.
	MaxDownloadBytes int64
	// MaxUntarBytes bounds the sum of extracted file sizes; default
	// DefaultMaxUntarBytes.
	MaxUntarBytes int64
	// MaxFiles bounds the number of archive entries; default
	// DefaultMaxFiles.
	MaxFiles int
	// MaxFileBytes bounds each extracted file; default DefaultMaxFileBytes,
	// and at most MaxUntarBytes.
	MaxFileBytes int64
	// GCMinAge protects a directory from GC for this long after a Fetch
	// returned it; default DefaultGCMinAge.
	GCMinAge time.Duration
	// HTTPClient replaces the default client (proxy from the environment,
	// as OLM injects HTTP_PROXY/HTTPS_PROXY/NO_PROXY). Its own Timeout, if
	// any, applies in addition to Timeout.
	HTTPClient *http.Client
}

// Store fetches artifacts into a root directory it owns and keeps them by
// digest. It is safe for concurrent use.
type Store struct {
	root   string
	opts   Options
	client *http.Client
	group  singleflight.Group
	now    func() time.Time // replaced in tests

	mu       sync.Mutex
	inflight map[string]int       // key -> Fetch calls in progress
	lastUsed map[string]time.Time // key -> when a Fetch last returned it
}

// New returns a Store keeping artifacts under root, creating root if needed.
// Temporary files left by a previous process are removed, which is why only
// one Store may use a root at a time.
func New(root string, opts Options) (*Store, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("creating artifact store %s: %w", root, err)
	}
	s := &Store{
		root:     root,
		opts:     withDefaults(opts),
		now:      time.Now,
		inflight: map[string]int{},
		lastUsed: map[string]time.Time{},
	}
	s.client = s.opts.HTTPClient
	if s.client == nil {
		s.client = defaultHTTPClient()
	}
	if err := s.removeTemporaries(); err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults fills zero fields of o.
func withDefaults(o Options) Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxUntarBytes <= 0 {
		o.MaxUntarBytes = DefaultMaxUntarBytes
	}
	if o.MaxDownloadBytes <= 0 {
		o.MaxDownloadBytes = o.MaxUntarBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	o.MaxFileBytes = min(o.MaxFileBytes, o.MaxUntarBytes)
	if o.GCMinAge <= 0 {
		o.GCMinAge = DefaultGCMinAge
	}
	return o
}

// defaultHTTPClient sets Proxy explicitly so the operator honours the proxy
// variables OLM injects even if http.DefaultTransport is ever replaced.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	return &http.Client{Transport: t}
}

// removeTemporaries deletes what a crashed process left half-written.
func (s *Store) removeTemporaries() error {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			errs = append(errs, os.RemoveAll(filepath.Join(s.root, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// Root returns the absolute directory the Store keeps artifacts in.
func (s *Store) Root() string { return s.root }

// Fetch returns the directory holding the extracted artifact, downloading,
// verifying and extracting it unless a complete copy is already on disk.
// Concurrent calls for the same digest share one download. The directory
// must be treated as read-only: it is shared by every caller of the digest.
// If ctx ends first Fetch returns ctx.Err(), but the shared download goes on
// (bounded by Options.Timeout) for the other callers.
func (s *Store) Fetch(ctx context.Context, a Artifact) (string, error) {
	d, err := parseDigest(a.Digest)
	if err != nil {
		return "", fmt.Errorf("artifact of revision %q: %w", a.Revision, err)
	}
	if a.URL == "" {
		return "", fmt.Errorf("%w: artifact of revision %q has no URL", ErrInvalidArtifact, a.Revision)
	}
	s.acquire(d)
	defer s.release(d)

	// The shared work must not die with the first caller's context, or one
	// cancelled reconcile would fail every other waiter.
	ch := s.group.DoChan(d.key(), func() (any, error) {
		return s.ensure(context.WithoutCancel(ctx), a, d)
	})
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return "", fmt.Errorf("fetching artifact of revision %s: %w", a.Revision, res.Err)
		}
		return res.Val.(string), nil
	}
}

// SkippedLinks returns the names of the symbolic and hard links that were
// skipped when the artifact, already fetched, was extracted: a layer reports
// them, since a file it expected may be missing because of them.
func (s *Store) SkippedLinks(a Artifact) ([]string, error) {
	d, err := parseDigest(a.Digest)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(s.marker(d))
	if err != nil {
		return nil, fmt.Errorf("reading the marker of artifact %s: %w", a.Revision, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return lines[1:], nil
}

// acquire marks d in use so GC keeps it; release records when it was last
// handed out, which starts the GCMinAge grace period.
func (s *Store) acquire(d digest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight[d.key()]++
}

func (s *Store) release(d digest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := d.key()
	if s.inflight[k]--; s.inflight[k] == 0 {
		delete(s.inflight, k)
	}
	s.lastUsed[k] = s.now()
}

// dir and marker are the on-disk names of d.
func (s *Store) dir(d digest) string    { return filepath.Join(s.root, d.key()) }
func (s *Store) marker(d digest) string { return s.dir(d) + markerSuffix }

// ensure makes the complete directory of d exist; it runs once per digest at
// a time (singleflight).
func (s *Store) ensure(ctx context.Context, a Artifact, d digest) (string, error) {
	s.acquire(d) // covers a download that outlives every waiting caller
	defer s.release(d)
	log := logf.FromContext(ctx).WithValues("revision", a.Revision, "digest", d.String())
	if s.complete(d) {
		log.V(1).Info("Artifact already on disk")
		return s.dir(d), nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	archive, err := s.download(ctx, a, d)
	if err != nil {
		return "", err
	}
	defer func() { _ = os.Remove(archive) }()
	skipped, err := s.extract(archive, d)
	if err != nil {
		return "", err
	}
	if len(skipped) > 0 {
		log.Info("Skipped links in artifact", "count", len(skipped), "first", skipped[0])
	}
	log.Info("Fetched artifact")
	return s.dir(d), nil
}

// complete reports whether d's directory is on disk and its marker, written
// last, says it was fully extracted from verified bytes.
func (s *Store) complete(d digest) bool {
	b, err := os.ReadFile(s.marker(d))
	first, _, _ := strings.Cut(string(b), "\n")
	if err != nil || strings.TrimSpace(first) != d.String() {
		return false
	}
	fi, err := os.Stat(s.dir(d))
	return err == nil && fi.IsDir()
}
