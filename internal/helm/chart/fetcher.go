package chart

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Defaults of Options. A chart is refused before it can hurt the operator,
// whichever path it comes by; each default is chosen so that no real chart
// or repository meets it (see docs/operations.md).
const (
	// DefaultIndexTTL: a new chart version is seen within a minute, while a
	// burst of releases of one repository costs one index request.
	DefaultIndexTTL = time.Minute
	// DefaultMaxIndexes bounds how many indexes and tag lists are kept.
	DefaultMaxIndexes = 32
	// DefaultMaxCacheBytes bounds the chart archives kept: a few hundred
	// typical charts (tens of KiB each), or a dozen of the largest allowed.
	DefaultMaxCacheBytes = 128 << 20
	// DefaultMaxIndexCacheBytes bounds the indexes kept, counted by what they
	// hold (a chart's versions, URLs and digests; not descriptions and the
	// like, which are read past): a few hundred repositories of common size.
	DefaultMaxIndexCacheBytes = 64 << 20
	// DefaultMaxIndexSize is Flux source-controller's MaxIndexSize: the
	// largest public indexes (Bitnami's before it moved to OCI) were ~20 MiB.
	DefaultMaxIndexSize = 50 << 20
	// DefaultMaxChartSize is Flux source-controller's MaxChartSize, for an
	// HTTP archive and an OCI chart layer alike. What the archive expands to
	// is bounded by the three caps below.
	DefaultMaxChartSize = 10 << 20
	// DefaultMaxDecompressedChartSize bounds what a chart expands to, its
	// packaged subcharts included. A loaded chart is held whole by each Helm
	// action on it and copied into every release record, so what a tenant
	// may make the operator hold is this times the releases in flight: at
	// 16 MiB, the --concurrent default of 4 reconciles holding a chart each
	// (plus the engine's copy) stays well inside a 512 MiB container, while
	// charts in common use decompress to a few MiB at most (the largest,
	// with many CRDs or dashboards, to under 10 MiB). Helm's own loader
	// refuses 100 MiB (archive.MaxDecompressedChartSize), the only bound
	// there was.
	DefaultMaxDecompressedChartSize = 16 << 20
	// DefaultMaxChartFileSize bounds each file of a chart, and each values
	// file read from a source artifact: Helm 3 enforced 5 MiB per file
	// (MaxDecompressedFileSize) until Helm 4 dropped it; the largest files in
	// real charts, CRDs, are around 1 MiB.
	DefaultMaxChartFileSize = 5 << 20
	// DefaultMaxChartFiles bounds a chart's files and directories, which the
	// byte caps do not (an archive of empty files), while each costs the
	// loader an allocation and Helm a template parse. Charts have tens to
	// hundreds of files; umbrella charts vendoring many subcharts, a couple
	// of thousand.
	DefaultMaxChartFiles = 5000
	// DefaultMaxManifestSize bounds an OCI manifest, and each page of a tag
	// list: a Helm chart's manifest is under 1 KiB, and 10,000 tags of
	// 128 characters fit in 1.3 MiB. oras-go's own default is 4 MiB.
	DefaultMaxManifestSize = 2 << 20
	// DefaultMaxTags bounds the tags of one OCI chart listed: charts with the
	// longest histories have a few thousand versions.
	DefaultMaxTags = 10000
	// DefaultMaxTagPages bounds the pages of one tag listing, so that a
	// registry sending endless empty pages with a next Link is cut short.
	DefaultMaxTagPages = 100
)

// manifestsPerIndex is how many OCI manifest digests are remembered per
// index or tag list kept: a few versions of each chart in use.
const manifestsPerIndex = 16

// maxTransports bounds the HTTP transports kept, one per distinct TLS
// configuration, so that connections are reused across fetches.
const maxTransports = 16

// Options tune a Fetcher; zero fields take the defaults above.
type Options struct {
	// IndexTTL is how long a repository index or OCI tag list is used without
	// asking the repository again. After it, an index is revalidated with
	// If-None-Match / If-Modified-Since, so an unchanged one is not
	// downloaded again. A negative value revalidates on every fetch.
	IndexTTL time.Duration
	// MaxIndexes is how many indexes and tag lists are kept.
	MaxIndexes int
	// MaxCacheBytes bounds the summed size of the chart archives kept.
	MaxCacheBytes int64
	// MaxIndexCacheBytes bounds the summed size of the indexes kept, as they
	// are held in memory, and separately of the tag lists kept.
	MaxIndexCacheBytes int64
	// MaxIndexSize is the largest index.yaml accepted, in bytes.
	MaxIndexSize int64
	// MaxChartSize is the largest chart archive or OCI chart layer accepted,
	// in bytes.
	MaxChartSize int64
	// MaxDecompressedChartSize bounds what a chart expands to, in bytes: the
	// tar streams gzip inflates (packaged subcharts included) and the files'
	// sizes summed; for a chart directory, its files' sizes.
	MaxDecompressedChartSize int64
	// MaxChartFileSize bounds each file of a chart, and each values file of
	// a source artifact, in bytes.
	MaxChartFileSize int64
	// MaxChartFiles bounds the files and directories of a chart, packaged
	// subcharts included.
	MaxChartFiles int
	// MaxManifestSize is the largest OCI manifest, and page of a tag list,
	// accepted, in bytes.
	MaxManifestSize int64
	// MaxTags is the most tags of one OCI chart accepted.
	MaxTags int
	// MaxTagPages is the most pages of one tag listing followed.
	MaxTagPages int
}

func (o Options) withDefaults() Options {
	if o.IndexTTL == 0 {
		o.IndexTTL = DefaultIndexTTL
	}
	o.MaxIndexes = orDefault(o.MaxIndexes, DefaultMaxIndexes)
	o.MaxCacheBytes = orDefault(o.MaxCacheBytes, DefaultMaxCacheBytes)
	o.MaxIndexCacheBytes = orDefault(o.MaxIndexCacheBytes, DefaultMaxIndexCacheBytes)
	o.MaxIndexSize = orDefault(o.MaxIndexSize, DefaultMaxIndexSize)
	o.MaxChartSize = orDefault(o.MaxChartSize, DefaultMaxChartSize)
	o.MaxDecompressedChartSize = orDefault(o.MaxDecompressedChartSize, DefaultMaxDecompressedChartSize)
	o.MaxChartFileSize = orDefault(o.MaxChartFileSize, DefaultMaxChartFileSize)
	o.MaxChartFiles = orDefault(o.MaxChartFiles, DefaultMaxChartFiles)
	o.MaxManifestSize = orDefault(o.MaxManifestSize, DefaultMaxManifestSize)
	o.MaxTags = orDefault(o.MaxTags, DefaultMaxTags)
	o.MaxTagPages = orDefault(o.MaxTagPages, DefaultMaxTagPages)
	return o
}

func orDefault[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Fetcher gets charts and keeps what it downloaded for the next release that
// needs it. One Fetcher serves the whole operator; it is safe for concurrent
// use.
type Fetcher struct {
	opts Options
	now  func() time.Time

	indexes   *lru[string, *indexEntry]
	tags      *lru[string, *tagsEntry]
	archives  *lru[string, *archive]
	manifests *lru[string, string] // cache scope + OCI manifest digest → archive key
	group     singleflight.Group

	transportMu sync.Mutex
	transports  map[string]*http.Transport // by TLS fingerprint
}

// NewFetcher returns a Fetcher with empty caches.
func NewFetcher(opts Options) *Fetcher {
	opts = opts.withDefaults()
	return &Fetcher{
		opts:       opts,
		now:        time.Now,
		indexes:    newLRU[string, *indexEntry](opts.MaxIndexCacheBytes, opts.MaxIndexes),
		tags:       newLRU[string, *tagsEntry](opts.MaxIndexCacheBytes, opts.MaxIndexes),
		archives:   newLRU[string, *archive](opts.MaxCacheBytes, 0),
		manifests:  newLRU[string, string](0, opts.MaxIndexes*manifestsPerIndex),
		transports: map[string]*http.Transport{},
	}
}

// Request says which chart to get and from where: set Repository for a
// HelmRepository source, ArtifactDir for a GitRepository, Bucket or
// OCIRepository whose artifact internal/source extracted.
type Request struct {
	// Chart is spec.chart.spec.chart: a chart name in a repository, or the
	// chart's path inside the artifact directory.
	Chart string
	// Version is spec.chart.spec.version, a semver range ("" means "*");
	// ignored for artifact directories, whose chart is what it is.
	Version string
	// ValuesFiles is spec.chart.spec.valuesFiles: merged in order over the
	// chart's values.yaml into Result.Chart.Values (see MergeValuesFiles).
	ValuesFiles []string
	// Repository is the HelmRepository's spec and credentials.
	Repository *Repository
	// ArtifactDir is where the source's artifact was extracted.
	ArtifactDir string
	// ArtifactRevision is the artifact's revision, e.g. "main@sha1:…".
	ArtifactRevision string
	// IgnoreMissingValuesFiles skips ValuesFiles that do not exist.
	IgnoreMissingValuesFiles bool
	// OCIRef, with an OCI Repository, pulls the chart by this tag or digest
	// instead of resolving Version against the registry's tags: a
	// HelmRelease's spec.chart.spec.ref (kind OCIRepository).
	OCIRef *OCIRef
}

// OCIRef is a chart's tag or manifest digest in an OCI repository; the
// digest wins when both are set.
type OCIRef struct {
	Tag    string
	Digest string
}

// NewRequest copies what a HelmRelease's chart template says; the caller
// adds Repository or ArtifactDir after looking up spec.sourceRef.
func NewRequest(spec kraanv1.HelmChartTemplateSpec) Request {
	return Request{Chart: spec.Chart, Version: spec.Version, ValuesFiles: spec.ValuesFiles,
		IgnoreMissingValuesFiles: spec.IgnoreMissingValuesFiles}
}

// Result is a loaded chart and where it came from.
type Result struct {
	// Chart is loaded and belongs to the caller: Helm's actions may change it.
	Chart *helmchart.Chart
	// Name and Version of the chart, from its Chart.yaml.
	Name    string
	Version string
	// Digest is "sha256:<hex>" of the chart archive; for a directory, of the
	// chart's files (names and contents), so an edit changes it.
	Digest string
	// URL is the archive's URL, the OCI reference (oci://…:<tag>) or the directory.
	URL string
	// ManifestDigest is the OCI manifest's digest; empty for other sources.
	ManifestDigest string
	// SourceRevision is what the version was resolved from: the digest of a
	// repository's index, or the OCI manifest digest; empty for directories,
	// whose caller knows the artifact revision.
	SourceRevision string
}

// Fetch gets the chart the request names, applies its values files and
// returns it loaded. Errors a user can act on are typed (see errors.go).
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Result, error) {
	res, err := f.fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(req.ValuesFiles) == 0 {
		return res, nil
	}
	var values map[string]any
	if req.Repository != nil {
		values, err = MergeValuesFiles(res.Chart, req.ValuesFiles, req.IgnoreMissingValuesFiles)
	} else {
		values, err = mergeArtifactValuesFiles(req.ArtifactDir, res.Chart, req.ValuesFiles, req.IgnoreMissingValuesFiles,
			f.opts.MaxChartFileSize)
	}
	if err != nil {
		return nil, err
	}
	res.Chart.Values = values
	return res, nil
}

func (f *Fetcher) fetch(ctx context.Context, req Request) (*Result, error) {
	switch {
	case req.Repository != nil && req.ArtifactDir != "":
		return nil, errors.New("request names both a repository and an artifact directory")
	case req.Repository != nil:
		if err := req.Repository.validate(); err != nil {
			return nil, err
		}
		if req.Repository.isOCI() && req.OCIRef != nil {
			return f.fetchOCIRef(ctx, req.Repository, req.Chart, *req.OCIRef)
		}
		if req.Repository.isOCI() {
			return f.fetchOCI(ctx, req.Repository, req.Chart, req.Version)
		}
		return f.fetchHTTP(ctx, req.Repository, req.Chart, req.Version)
	case req.ArtifactDir != "":
		return loadDir(req.ArtifactDir, req.Chart, f.opts.expansionLimits())
	default:
		return nil, errors.New("request names neither a repository nor an artifact directory")
	}
}

// shared runs fn once for all concurrent callers with the same key. fn gets
// a context detached from the first caller's, bounded by timeout instead: its
// result serves every caller waiting, so one caller giving up must not fail
// the others. Each caller still returns as soon as its own context ends.
func (f *Fetcher) shared(ctx context.Context, key string, timeout time.Duration,
	fn func(context.Context) (any, error)) (any, error) {
	ch := f.group.DoChan(key, func() (any, error) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		return fn(sctx)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		return r.Val, r.Err
	}
}

// fresh reports whether something fetched at checked is still within the TTL.
func (f *Fetcher) fresh(checked time.Time) bool {
	return f.now().Sub(checked) < f.opts.IndexTTL
}

// transport returns the shared transport for the credentials' TLS material.
// Reusing transports keeps connections alive across fetches.
func (f *Fetcher) transport(c *Credentials) (*http.Transport, error) {
	key := c.tlsFingerprint()
	f.transportMu.Lock()
	defer f.transportMu.Unlock()
	if t, ok := f.transports[key]; ok {
		return t, nil
	}
	cfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	if len(f.transports) >= maxTransports {
		f.evictTransport()
	}
	t := newTransport(cfg)
	f.transports[key] = t
	return t, nil
}

// evictTransport drops one transport with TLS material; the caller holds
// transportMu. Which one does not matter much: it only costs a new connection.
func (f *Fetcher) evictTransport() {
	for k, t := range f.transports {
		if k != "" {
			t.CloseIdleConnections()
			delete(f.transports, k)
			return
		}
	}
}

// newTransport is Go's default transport (proxy from HTTPS_PROXY, HTTP_PROXY
// and NO_PROXY; dial and TLS timeouts) with the repository's TLS settings and
// a bound on waiting for response headers.
func newTransport(cfg *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       cfg,
	}
}

// checkArchive measures what a downloaded archive expands to before it is
// cached, so that only archives within the caps are ever loaded.
func (f *Fetcher) checkArchive(data []byte, what string) error {
	return newExpansion(f.opts.expansionLimits(), what).checkArchive(data)
}

// resultFromArchive loads a downloaded archive and checks its dependencies
// are inside it.
func resultFromArchive(a *archive, url string) (*Result, error) {
	ch, err := a.load()
	if err != nil {
		return nil, fmt.Errorf("loading chart archive %s: %w", url, err)
	}
	// A packaged chart's lock is its publisher's business: only missing
	// dependencies, which Helm would refuse too, are an error here.
	if err := checkDependencies(ch, false); err != nil {
		return nil, err
	}
	return &Result{Chart: ch, Name: ch.Name(), Version: ch.Metadata.Version, Digest: a.digest, URL: url}, nil
}
