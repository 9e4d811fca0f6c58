package chart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// tagsEntry is a chart's tag list from an OCI registry.
type tagsEntry struct {
	tags    []string
	checked time.Time
}

// fetchOCI gets a chart from an OCI registry: the chart is the repository
// <url>/<name>, its versions are the tags. The tag is resolved to a manifest
// digest on every fetch (tags can move), and the pull is skipped when that
// manifest's chart is cached.
//
// Helm's registry client takes no context; each of its requests is bounded
// by the repository timeout instead, and callers stop waiting when their
// context ends (see shared).
func (f *Fetcher) fetchOCI(ctx context.Context, r *Repository, name, constraint string) (*Result, error) {
	client, err := f.registryClient(r)
	if err != nil {
		return nil, err
	}
	base := ociBase(r, name)
	tags, err := f.ociTags(ctx, client, r, base, name, false)
	if err != nil {
		return nil, err
	}
	version, err := resolveVersion(name, constraint, tags)
	if err != nil {
		return nil, err
	}
	// OCI tags cannot hold "+": Helm pushes build metadata as "_".
	ref := base + ":" + strings.ReplaceAll(version, "+", "_")
	v, err := f.shared(ctx, "oci\x00"+ref+"#"+r.Credentials.fingerprint(), r.timeout(),
		func(context.Context) (any, error) { return f.pullOCI(client, r, base, ref) })
	if err != nil {
		return nil, err
	}
	pulled := v.(*ociPull)
	res, err := resultFromArchive(pulled.archive, "oci://"+ref)
	if err != nil {
		return nil, err
	}
	res.ManifestDigest = pulled.manifestDigest
	res.SourceRevision = pulled.manifestDigest
	return res, nil
}

// ociPull is a pulled chart and the manifest it came from.
type ociPull struct {
	archive        *archive
	manifestDigest string
}

// ociBase is the OCI repository of chart name: <url>/<name>, no scheme.
func ociBase(r *Repository, name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(r.URL, "oci://"), "/") + "/" + name
}

// ociTags lists the chart's tags, from the cache within the TTL (or while the
// repository is suspended). A registry offers no conditional listing, so after
// the TTL, or with revalidate, the list is fetched again.
func (f *Fetcher) ociTags(ctx context.Context, client *registry.Client, r *Repository, base, name string, revalidate bool) ([]string, error) {
	key := base + "#" + r.Credentials.fingerprint()
	if e, ok := f.tags.get(key); ok && (r.Suspended || (!revalidate && f.fresh(e.checked))) {
		return e.tags, nil
	}
	v, err := f.shared(ctx, "tags\x00"+key, r.timeout(), func(context.Context) (any, error) {
		tags, err := client.Tags(base)
		if err != nil {
			return nil, notFoundAsChart(ociError(err, r, "listing tags", "oci://"+base), name, r.URL)
		}
		e := &tagsEntry{tags: tags, checked: f.now()}
		f.tags.add(key, e, 1)
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*tagsEntry).tags, nil
}

// pullOCI resolves ref to its manifest and pulls the chart layer unless an
// earlier pull of that manifest is cached. It pulls by digest so the chart
// is the manifest resolved, even if the tag moves in between.
func (f *Fetcher) pullOCI(client *registry.Client, r *Repository, base, ref string) (*ociPull, error) {
	desc, err := client.Resolve(ref)
	if err != nil {
		return nil, ociError(err, r, "resolving tag", "oci://"+ref)
	}
	manifestDigest := desc.Digest.String()
	if key, ok := f.manifests.get(manifestDigest); ok {
		if a, ok := f.archives.get(key); ok {
			return &ociPull{archive: a, manifestDigest: manifestDigest}, nil
		}
	}
	res, err := client.Pull(base + "@" + manifestDigest)
	if err != nil {
		return nil, ociError(err, r, "pulling chart", "oci://"+ref)
	}
	// The registry client verified the layer against its digest.
	a := newArchive(res.Chart.Data)
	f.archives.add(a.digest, a, int64(len(a.data)))
	f.manifests.add(manifestDigest, a.digest, 1)
	return &ociPull{archive: a, manifestDigest: manifestDigest}, nil
}

// registryClient is Helm's registry client with the repository's transport
// (proxy, TLS) and an authorizer of its own: the repository's credentials,
// for its registry host only, or none. Helm's default authorizer would fall
// back to the operator's own Helm and Docker logins, which no release should
// borrow. The client is made per fetch, so its token cache never mixes
// tenants' credentials.
func (f *Fetcher) registryClient(r *Repository) (*registry.Client, error) {
	t, err := f.transport(r.Credentials)
	if err != nil {
		return nil, err
	}
	httpClient := &http.Client{Transport: t, Timeout: r.timeout()}
	authorizer := auth.Client{Client: httpClient, Cache: auth.NewCache()}
	authorizer.SetUserAgent(userAgent)
	if c := r.Credentials; c != nil && c.Username != "" {
		u, err := url.Parse(r.URL)
		if err != nil {
			return nil, err
		}
		authorizer.Credential = auth.StaticCredential(u.Host, auth.Credential{Username: c.Username, Password: c.Password})
	}
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(httpClient),
		registry.ClientOptAuthorizer(authorizer),
		registry.ClientOptWriter(io.Discard),
	}
	if r.Insecure {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	return registry.NewClient(opts...)
}

// ociError turns a registry client error of a step into our typed errors.
func ociError(err error, r *Repository, step, target string) error {
	anonymous := r.Credentials == nil || r.Credentials.Username == ""
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
