package chart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// userAgent names the operator to repositories, for their logs.
const userAgent = "kraan-operator"

// indexEntry is a parsed index and what revalidating it needs. Entries are
// replaced, never changed, so readers need no lock.
type indexEntry struct {
	index        *index
	etag         string
	lastModified string
	checked      time.Time
	// digest identifies the index's content: "sha256:<hex>" of the bytes.
	digest string
	// size estimates the memory the entry holds (index.size, not the size
	// downloaded): its cost in the cache.
	size int64
}

// fetchHTTP gets a chart from a Helm HTTP repository: index, version, archive.
func (f *Fetcher) fetchHTTP(ctx context.Context, r *Repository, name, constraint string) (*Result, error) {
	scope := r.cacheScope()
	entry, err := f.index(ctx, r, scope, false)
	if err != nil {
		return nil, err
	}
	cv, err := pickVersion(entry.index, r.indexURL(), name, constraint)
	if err != nil {
		return nil, err
	}
	// The first URL is the one Helm downloads; the others are mirrors.
	chartURL, err := repo.ResolveReferenceURL(r.URL, cv.URL)
	if err != nil {
		return nil, &InvalidIndexError{URL: r.indexURL(), Err: err}
	}
	a, err := f.archive(ctx, r, scope, cv.Digest, chartURL)
	if err != nil {
		return nil, err
	}
	res, err := resultFromArchive(a, chartURL)
	if err != nil {
		return nil, err
	}
	res.SourceRevision = entry.digest
	return res, nil
}

// index returns the repository's index from the cache while it is fresh (or
// the repository is suspended), and otherwise revalidates or downloads it,
// once for all concurrent callers. With revalidate it asks the repository
// whatever the cache holds, unless the repository is suspended. scope is
// r.cacheScope().
func (f *Fetcher) index(ctx context.Context, r *Repository, scope string, revalidate bool) (*indexEntry, error) {
	key := indexKey(r, scope)
	if e, ok := f.indexes.get(key); ok && (r.Suspended || (!revalidate && f.fresh(e.checked))) {
		return e, nil
	}
	flight := "index\x00" + key
	if revalidate {
		// A revalidating caller must reach the repository, so it never joins
		// a flight that may answer from the cache.
		flight = "revalidate\x00" + key
	}
	v, err := f.shared(ctx, flight, r.timeout(), func(ctx context.Context) (any, error) {
		// A caller that missed the cache just before an earlier refresh
		// finished must not ask again.
		if e, ok := f.indexes.get(key); ok && !revalidate && f.fresh(e.checked) {
			return e, nil
		}
		return f.refreshIndex(ctx, r, key)
	})
	if err != nil {
		return nil, err
	}
	return v.(*indexEntry), nil
}

// ErrNoIndex is returned by IndexRevision for repositories without an index
// (OCI repositories list tags instead).
var ErrNoIndex = errors.New("the repository has no index")

// IndexRevision identifies the content of the repository's index, so that a
// caller can tell when it changed. With revalidate, the repository is asked
// now (conditionally when an index is cached); otherwise the cached index's
// revision is returned when there is one.
func (f *Fetcher) IndexRevision(ctx context.Context, r *Repository, revalidate bool) (string, error) {
	if err := r.validate(); err != nil {
		return "", err
	}
	if r.isOCI() {
		return "", ErrNoIndex
	}
	scope := r.cacheScope()
	if e, ok := f.indexes.get(indexKey(r, scope)); ok && !revalidate {
		return e.digest, nil
	}
	e, err := f.index(ctx, r, scope, true)
	if err != nil {
		return "", err
	}
	return e.digest, nil
}

// refreshIndex asks for the index, conditionally when one is cached: a 304
// costs no download and no parsing, which matters for indexes of megabytes.
func (f *Fetcher) refreshIndex(ctx context.Context, r *Repository, key string) (*indexEntry, error) {
	url := r.indexURL()
	prev, cached := f.indexes.get(key)
	header := http.Header{}
	if cached {
		setIfPresent(header, "If-None-Match", prev.etag)
		setIfPresent(header, "If-Modified-Since", prev.lastModified)
	}
	resp, err := f.get(ctx, r, "fetching index", url, header)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && cached {
		e := *prev
		e.checked = f.now()
		f.indexes.add(key, &e, e.size)
		return &e, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: url, StatusCode: resp.StatusCode}
	}
	data, err := f.readBody(resp, "index "+url, url, f.opts.MaxIndexSize, FlagMaxIndexSize)
	if err != nil {
		return nil, err
	}
	idx, err := parseIndex(data)
	if err != nil {
		return nil, &InvalidIndexError{URL: url, Err: err}
	}
	sum := sha256.Sum256(data)
	e := &indexEntry{
		digest:       "sha256:" + hex.EncodeToString(sum[:]),
		index:        idx,
		etag:         resp.Header.Get("ETag"),
		lastModified: resp.Header.Get("Last-Modified"),
		checked:      f.now(),
	}
	e.size = idx.size + int64(len(e.digest)+len(e.etag)+len(e.lastModified)+len(url))
	f.indexes.add(key, e, e.size)
	return e, nil
}

// indexKey is where a repository's index is cached, within its cache scope.
func indexKey(r *Repository, scope string) string {
	return scope + "\x00index:" + r.indexURL()
}

// readBody reads a response body of at most limit bytes: a Content-Length
// over the limit is refused before reading, and a body that runs past the
// limit (with no or a false Content-Length) is cut off at limit+1 bytes.
// what names the download in a LimitError, flag the cap's flag.
func (f *Fetcher) readBody(resp *http.Response, what, url string, limit int64, flag string) ([]byte, error) {
	if err := checkDeclared(what, resp.ContentLength, limit, flag); err != nil {
		return nil, err
	}
	data, err := readCapped(resp.Body, what, limit, flag)
	var limitErr *LimitError
	if err != nil && !errors.As(err, &limitErr) {
		return nil, &UnreachableError{URL: url, Err: err}
	}
	return data, err
}

func setIfPresent(h http.Header, key, value string) {
	if value != "" {
		h.Set(key, value)
	}
}

// archive returns a chart archive from the cache or downloads it, once for
// all concurrent callers. Archives are cached within the repository's cache
// scope (its URL and credentials): by the index's digest, so releases of the
// same chart share one download, or by URL when the index gives no digest.
// A digest alone is never enough to be served a cached archive: it is public
// (in every release's status), while the archive may be private.
func (f *Fetcher) archive(ctx context.Context, r *Repository, scope, indexDigest, url string) (*archive, error) {
	want := normalizeDigest(indexDigest)
	key := scope + "\x00" + want
	if want == "" {
		key = scope + "\x00url:" + url
	}
	if a, ok := f.archives.get(key); ok {
		return a, nil
	}
	v, err := f.shared(ctx, "archive\x00"+key, r.timeout(), func(ctx context.Context) (any, error) {
		// A caller that missed the cache just before an earlier download
		// finished must not download again.
		if a, ok := f.archives.get(key); ok {
			return a, nil
		}
		return f.download(ctx, r, url, want, key)
	})
	if err != nil {
		return nil, err
	}
	return v.(*archive), nil
}

// download gets an archive and checks it is the one the index describes,
// and within the caps once decompressed, before caching it.
func (f *Fetcher) download(ctx context.Context, r *Repository, url, want, key string) (*archive, error) {
	resp, err := f.get(ctx, r, "downloading chart", url, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: url, StatusCode: resp.StatusCode}
	}
	data, err := f.readBody(resp, "chart archive "+url, url, f.opts.MaxChartSize, FlagMaxChartSize)
	if err != nil {
		return nil, err
	}
	a := newArchive(data)
	if want != "" && want != a.digest {
		return nil, &DigestMismatchError{URL: url, Expected: want, Actual: a.digest}
	}
	if err := f.checkArchive(data, "chart archive "+url); err != nil {
		return nil, err
	}
	f.archives.add(key, a, int64(len(data)))
	return a, nil
}

// get sends a GET and turns failures into typed errors; step names what it is
// for in an AuthError. Basic auth goes to the repository's own host only,
// unless spec.passCredentials says otherwise. The caller closes the body of
// a 2xx or 304.
func (f *Fetcher) get(ctx context.Context, r *Repository, step, url string, header http.Header) (*http.Response, error) {
	t, err := f.transport(r.Credentials)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %s: %w", url, err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("User-Agent", userAgent)
	anonymous := true
	if c := r.Credentials; c != nil && c.Username != "" && r.sendsBasicAuthTo(url) {
		req.SetBasicAuth(c.Username, c.Password)
		anonymous = false
	}
	resp, err := (&http.Client{Transport: t}).Do(req)
	if err != nil {
		return nil, &UnreachableError{URL: url, Err: err}
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		resp.Body.Close()
		return nil, &AuthError{Step: step, URL: url, StatusCode: resp.StatusCode, Anonymous: anonymous}
	}
	if resp.StatusCode >= http.StatusBadRequest {
		resp.Body.Close()
		return nil, &StatusError{URL: url, StatusCode: resp.StatusCode}
	}
	return resp, nil
}
