package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// tagsEntry is a chart's tag list from an OCI registry.
type tagsEntry struct {
	tags    []string
	checked time.Time
	// size approximates the list's memory: its cost in the cache.
	size int64
}

// fetchOCI gets a chart from an OCI registry: the chart is the repository
// <url>/<name>, its versions are the tags. The tag is resolved to a manifest
// digest on every fetch (tags can move), and the pull is skipped when that
// manifest's chart is cached in the repository's cache scope.
//
// The registry is spoken to with oras-go directly rather than through Helm's
// registry client, whose Pull holds whole blobs in memory at whatever size
// the registry declares and follows tag-list pages without end: every size
// and count here is capped by Options (see limits.go).
func (f *Fetcher) fetchOCI(ctx context.Context, r *Repository, name, constraint string) (*Result, error) {
	base := ociBase(r, name)
	repo, err := f.ociRepository(r, base)
	if err != nil {
		return nil, err
	}
	scope := r.cacheScope()
	tags, err := f.ociTags(ctx, repo, r, scope, base, name, false)
	if err != nil {
		return nil, err
	}
	version, err := resolveVersion(name, constraint, tags)
	if err != nil {
		return nil, err
	}
	// OCI tags cannot hold "+": Helm pushes build metadata as "_".
	tag := strings.ReplaceAll(version, "+", "_")
	ref := base + ":" + tag
	v, err := f.shared(ctx, "oci\x00"+scope+"\x00"+ref, r.timeout(),
		func(ctx context.Context) (any, error) { return f.pullOCI(ctx, repo, r, scope, ref, tag) })
	if err != nil {
		return nil, err
	}
	return v.(*ociPull).result("oci://" + ref)
}

// fetchOCIRef pulls chart name by tag or digest, without listing the
// repository's tags: any tag, semver or not, as Flux's OCIRepository pulls
// it. Sizes, digests and caches are those of fetchOCI.
func (f *Fetcher) fetchOCIRef(ctx context.Context, r *Repository, name string, ref OCIRef) (*Result, error) {
	base := ociBase(r, name)
	repo, err := f.ociRepository(r, base)
	if err != nil {
		return nil, err
	}
	target, full := ref.Tag, base+":"+ref.Tag
	if ref.Digest != "" {
		target, full = ref.Digest, base+"@"+ref.Digest
	}
	if target == "" {
		return nil, fmt.Errorf("oci://%s: neither a tag nor a digest to pull", base)
	}
	scope := r.cacheScope()
	v, err := f.shared(ctx, "oci\x00"+scope+"\x00"+full, r.timeout(),
		func(ctx context.Context) (any, error) { return f.pullOCI(ctx, repo, r, scope, full, target) })
	if err != nil {
		return nil, err
	}
	pulled := v.(*ociPull)
	if ref.Digest != "" && pulled.manifestDigest != ref.Digest {
		return nil, fmt.Errorf("oci://%s: the registry answered with manifest %s", full, pulled.manifestDigest)
	}
	return pulled.result("oci://" + full)
}

// IsChartLayerMediaType says whether a layer of that media type is a Helm
// chart, as helm-controller's OCIRepository layer selector picks it.
func IsChartLayerMediaType(mediaType string) bool {
	return mediaType == registry.ChartLayerMediaType || mediaType == registry.LegacyChartLayerMediaType
}

// ociPull is a pulled chart and the manifest it came from.
type ociPull struct {
	archive        *archive
	manifestDigest string
}

// result is the pulled chart, loaded, as the reference url names it; the
// manifest digest is its source revision.
func (p *ociPull) result(url string) (*Result, error) {
	res, err := resultFromArchive(p.archive, url)
	if err != nil {
		return nil, err
	}
	res.ManifestDigest = p.manifestDigest
	res.SourceRevision = p.manifestDigest
	return res, nil
}

// ociBase is the OCI repository of chart name: <url>/<name>, no scheme.
func ociBase(r *Repository, name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(r.URL, "oci://"), "/") + "/" + name
}

// ociTags lists the chart's tags, from the cache within the TTL (or while the
// repository is suspended). A registry offers no conditional listing, so after
// the TTL, or with revalidate, the list is fetched again.
func (f *Fetcher) ociTags(ctx context.Context, repo *remote.Repository, r *Repository, scope, base, name string, revalidate bool) ([]string, error) {
	key := scope + "\x00tags:" + base
	if e, ok := f.tags.get(key); ok && (r.Suspended || (!revalidate && f.fresh(e.checked))) {
		return e.tags, nil
	}
	v, err := f.shared(ctx, "tags\x00"+key, r.timeout(), func(ctx context.Context) (any, error) {
		tags, err := f.listTags(ctx, repo, base)
		if err != nil {
			return nil, notFoundAsChart(ociError(err, r, "listing tags", "tag list of oci://"+base), name, r.URL)
		}
		e := &tagsEntry{tags: tags, checked: f.now(), size: tagsSize(tags)}
		f.tags.add(key, e, e.size)
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*tagsEntry).tags, nil
}

// listTags lists the chart versions among a repository's tags, newest first,
// as Helm's registry client does ("_" read as "+", strict semver only). It
// stops at MaxTags tags or MaxTagPages pages; each page is bounded by
// MaxManifestSize through the transport.
func (f *Fetcher) listTags(ctx context.Context, repo *remote.Repository, base string) ([]string, error) {
	var versions []*semver.Version
	seen := 0
	err := repo.Tags(ctx, "", func(tags []string) error {
		if seen += len(tags); seen > f.opts.MaxTags {
			return &LimitError{What: "tag list of oci://" + base, Limit: int64(f.opts.MaxTags), Unit: unitTags, Flag: FlagMaxTags}
		}
		for _, tag := range tags {
			if v, err := semver.StrictNewVersion(strings.ReplaceAll(tag, "_", "+")); err == nil {
				versions = append(versions, v)
			}
		}
		return nil
	})
	if errors.Is(err, errdef.ErrTooManyPages) {
		return nil, &LimitError{What: "tag list of oci://" + base, Limit: int64(f.opts.MaxTagPages), Unit: unitPages, Flag: FlagMaxTagPages}
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(versions, func(a, b *semver.Version) int { return b.Compare(a) })
	tags := make([]string, len(versions))
	for i, v := range versions {
		tags[i] = v.String()
	}
	return tags, nil
}

// tagsSize approximates the memory a tag list holds.
func tagsSize(tags []string) int64 {
	const perString = 16 // a string header
	size := int64(0)
	for _, t := range tags {
		size += int64(len(t)) + perString
	}
	return size
}

// pullOCI resolves ref to its manifest and pulls the chart layer unless an
// earlier pull of that manifest is cached in the same cache scope. It pulls
// by digest so the chart is the manifest resolved, even if the tag moves in
// between. A manifest digest alone is never enough to be served a cached
// chart: a hostile registry can claim any digest for its tags.
func (f *Fetcher) pullOCI(ctx context.Context, repo *remote.Repository, r *Repository, scope, ref, tag string) (*ociPull, error) {
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return nil, ociError(err, r, "resolving tag", "oci://"+ref)
	}
	manifestDigest := desc.Digest.String()
	manifestKey := scope + "\x00manifest:" + manifestDigest
	if key, ok := f.manifests.get(manifestKey); ok {
		if a, ok := f.archives.get(key); ok {
			return &ociPull{archive: a, manifestDigest: manifestDigest}, nil
		}
	}
	layer, err := f.chartLayer(ctx, repo, r, ref, desc)
	if err != nil {
		return nil, err
	}
	a, err := f.pullLayer(ctx, repo, r, ref, layer)
	if err != nil {
		return nil, err
	}
	key := scope + "\x00" + a.digest
	f.archives.add(key, a, int64(len(a.data)))
	f.manifests.add(manifestKey, key, int64(len(manifestKey)+len(key)))
	return &ociPull{archive: a, manifestDigest: manifestDigest}, nil
}

// chartLayer fetches the manifest desc describes, at most MaxManifestSize
// bytes and checked against its digest, and returns its chart layer.
func (f *Fetcher) chartLayer(ctx context.Context, repo *remote.Repository, r *Repository, ref string, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	what := "manifest of oci://" + ref
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return ocispec.Descriptor{}, fmt.Errorf("%s has media type %s: a Helm chart is an OCI image manifest (%s)",
			what, desc.MediaType, ocispec.MediaTypeImageManifest)
	}
	if err := checkDeclared(what, desc.Size, f.opts.MaxManifestSize, FlagMaxManifestSize); err != nil {
		return ocispec.Descriptor{}, err
	}
	data, err := fetchVerified(ctx, repo.Manifests(), desc, what)
	if err != nil {
		return ocispec.Descriptor{}, ociError(err, r, "pulling chart", "oci://"+ref)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(data, &manifest); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%s is not an OCI image manifest: %w", what, err)
	}
	if manifest.Config.MediaType != registry.ConfigMediaType {
		return ocispec.Descriptor{}, fmt.Errorf("%s is not a Helm chart: its config has media type %q, not %s",
			what, manifest.Config.MediaType, registry.ConfigMediaType)
	}
	for _, l := range manifest.Layers {
		if l.MediaType == registry.ChartLayerMediaType || l.MediaType == registry.LegacyChartLayerMediaType {
			return l, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s has no layer of media type %s", what, registry.ChartLayerMediaType)
}

// pullLayer downloads the chart layer: refused before any byte is read when
// it declares more than MaxChartSize, and read to at most its declared size
// (plus one byte to catch a longer body), then checked against its digest
// and measured decompressed.
func (f *Fetcher) pullLayer(ctx context.Context, repo *remote.Repository, r *Repository, ref string, layer ocispec.Descriptor) (*archive, error) {
	what := "chart layer of oci://" + ref
	if err := checkDeclared(what, layer.Size, f.opts.MaxChartSize, FlagMaxChartSize); err != nil {
		return nil, err
	}
	data, err := fetchVerified(ctx, repo.Blobs(), layer, what)
	if err != nil {
		return nil, ociError(err, r, "pulling chart", "oci://"+ref)
	}
	if err := f.checkArchive(data, what); err != nil {
		return nil, err
	}
	return newArchive(data), nil
}

// contentFetcher is the part of oras' manifest and blob stores fetchVerified needs.
type contentFetcher interface {
	Fetch(ctx context.Context, target ocispec.Descriptor) (io.ReadCloser, error)
}

// fetchVerified reads what desc describes: at most desc.Size bytes are kept,
// a body longer or shorter than declared is an error, and the content must
// have desc's digest. The caller has checked desc.Size against its cap.
func fetchVerified(ctx context.Context, store contentFetcher, desc ocispec.Descriptor, what string) ([]byte, error) {
	if desc.Size < 0 {
		return nil, fmt.Errorf("%s declares a negative size", what)
	}
	rc, err := store.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	buf.Grow(int(desc.Size))
	if _, err := io.Copy(&buf, io.LimitReader(rc, desc.Size+1)); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if int64(len(data)) != desc.Size {
		return nil, &ContentMismatchError{What: what, Problem: fmt.Sprintf("the registry sent %s, not the %s its descriptor declares",
			sentSize(int64(len(data)), desc.Size), formatBytes(desc.Size))}
	}
	if got := desc.Digest.Algorithm().FromBytes(data); got != desc.Digest {
		return nil, &ContentMismatchError{What: what, Problem: fmt.Sprintf("the registry sent content of digest %s, not %s", got, desc.Digest)}
	}
	return data, nil
}

// sentSize says how much a registry sent: "more" past the declared size,
// which is where reading stopped.
func sentSize(got, declared int64) string {
	if got > declared {
		return "more"
	}
	return formatBytes(got)
}

// ociRepository is the chart's repository in its registry, spoken to with the
// repository's transport (proxy, TLS) behind the Fetcher's caps, and an
// authorizer of its own: the repository's credentials, for its registry host
// only, or none. Helm's default authorizer would fall back to the operator's
// own Helm and Docker logins, which no release should borrow. It is made per
// fetch, so its token cache never mixes tenants' credentials.
func (f *Fetcher) ociRepository(r *Repository, base string) (*remote.Repository, error) {
	t, err := f.transport(r.Credentials)
	if err != nil {
		return nil, err
	}
	httpClient := &http.Client{Timeout: r.timeout(),
		Transport: &cappedTransport{base: t, metadataLimit: f.opts.MaxManifestSize, blobLimit: f.opts.MaxChartSize}}
	authorizer := &auth.Client{Client: httpClient, Cache: auth.NewCache()}
	authorizer.SetUserAgent(userAgent)
	if c := r.Credentials; c != nil && c.Username != "" {
		u, err := url.Parse(r.URL)
		if err != nil {
			return nil, err
		}
		authorizer.Credential = auth.StaticCredential(u.Host, auth.Credential{Username: c.Username, Password: c.Password})
	}
	repo, err := remote.NewRepository(base)
	if err != nil {
		return nil, fmt.Errorf("invalid OCI repository %s: %w", base, err)
	}
	repo.Client = authorizer
	repo.PlainHTTP = r.Insecure
	repo.TagListMaxPages = f.opts.MaxTagPages
	// cappedTransport refuses a tag-list page over the cap with a LimitError
	// before oras' own bound cuts it into undecodable JSON.
	repo.MaxMetadataBytes = f.opts.MaxManifestSize + 1
	return repo, nil
}

// ociError turns a registry error of a step into our typed errors; target
// names what was asked for.
func ociError(err error, r *Repository, step, target string) error {
	anonymous := r.Credentials == nil || r.Credentials.Username == ""
	var limit *LimitError
	if errors.As(err, &limit) {
		// The transport only knows the URL; name what it was for.
		return &LimitError{What: target, Declared: limit.Declared, Limit: limit.Limit, Unit: limit.Unit, Flag: limit.Flag}
	}
	var mismatch *ContentMismatchError
	if errors.As(err, &mismatch) {
		return mismatch
	}
	// A registry asking for basic auth of a client without credentials.
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return &AuthError{Step: step, URL: target, StatusCode: http.StatusUnauthorized, Anonymous: anonymous}
	}
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return &AuthError{Step: step, URL: target, StatusCode: resp.StatusCode, Anonymous: anonymous}
		}
		return &StatusError{URL: target, StatusCode: resp.StatusCode}
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return &StatusError{URL: target, StatusCode: http.StatusNotFound}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return &UnreachableError{URL: target, Err: err}
	}
	return fmt.Errorf("%s: %w", target, err)
}

// notFoundAsChart reads a 404 on listing a chart's tags as "no such chart":
// registries answer so for a repository that does not exist.
func notFoundAsChart(err error, chartName, repoURL string) error {
	var status *StatusError
	if errors.As(err, &status) && status.StatusCode == http.StatusNotFound {
		return &ChartNotFoundError{Chart: chartName, Source: repoURL}
	}
	return err
}
