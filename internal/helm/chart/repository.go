package chart

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Repository types, as in a HelmRepository's spec.type.
const (
	// RepositoryTypeDefault is a Helm HTTP repository serving index.yaml.
	RepositoryTypeDefault = "default"
	// RepositoryTypeOCI is an OCI registry; its URL starts with oci://.
	RepositoryTypeOCI = "oci"
)

// defaultTimeout bounds one index fetch or chart download, as a
// HelmRepository's spec.timeout does (Flux's default is also 60s).
const defaultTimeout = 60 * time.Second

// Repository is what fetching needs from a source.toolkit.fluxcd.io/v1
// HelmRepository: the caller copies its spec and reads its Secret.
type Repository struct {
	// URL is spec.url: https://… for type default, oci://host/path for oci.
	URL string
	// Type is spec.type: RepositoryTypeDefault ("" means default) or RepositoryTypeOCI.
	Type string
	// Insecure is spec.insecure: talk plain HTTP to an OCI registry. Like
	// Flux, it only applies to type oci; a default repository's scheme says
	// whether TLS is used.
	Insecure bool
	// Timeout is spec.timeout, per index fetch or chart download; 0 means 60s.
	Timeout time.Duration
	// PassCredentials is spec.passCredentials: send basic auth to chart
	// URLs on other hosts than the repository's too. Off by default, as in
	// Helm and Flux, so that an index cannot lead credentials elsewhere.
	PassCredentials bool
	// Credentials are read from spec.secretRef and spec.certSecretRef; nil
	// means anonymous.
	Credentials *Credentials
	// Suspended is spec.suspend: the index or tag list last fetched is used
	// as it is, as a suspended source keeps serving its last artifact in
	// Flux. Only a repository never fetched is asked.
	Suspended bool
}

// validate checks the type and URL scheme agree, so that a HelmRepository
// with a mistake gets a message saying which field to fix.
func (r *Repository) validate() error {
	u, err := url.Parse(r.URL)
	if err != nil {
		return fmt.Errorf("invalid repository URL %q: %w", r.URL, err)
	}
	switch r.Type {
	case RepositoryTypeOCI:
		if u.Scheme != "oci" {
			return fmt.Errorf("repository %s has type oci, so its URL must start with oci://", r.URL)
		}
	case "", RepositoryTypeDefault:
		if u.Scheme == "oci" {
			return fmt.Errorf("repository %s is an OCI registry: set type: oci", r.URL)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("repository URL %s must start with http:// or https://", r.URL)
		}
	default:
		return fmt.Errorf("repository %s has unknown type %q (want default or oci)", r.URL, r.Type)
	}
	return nil
}

func (r *Repository) isOCI() bool {
	return r.Type == RepositoryTypeOCI
}

func (r *Repository) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return defaultTimeout
}

// indexURL is where a default repository's index lives.
func (r *Repository) indexURL() string {
	return strings.TrimSuffix(r.URL, "/") + "/index.yaml"
}

// sendsBasicAuthTo reports whether basic auth goes with a request to
// target: always to the repository's own scheme and host, elsewhere only
// under spec.passCredentials (Helm's pass_credentials_all).
func (r *Repository) sendsBasicAuthTo(target string) bool {
	if r.PassCredentials {
		return true
	}
	a, errA := url.Parse(r.URL)
	b, errB := url.Parse(target)
	return errors.Join(errA, errB) == nil && a.Scheme == b.Scheme && a.Host == b.Host
}

// cacheScope names whom something cached from this repository may be served
// to: requests for the same repository (its URL, normalised) with the same
// credentials (their salted fingerprint; "" when anonymous). Every key of a
// cached archive, OCI manifest, index or tag list starts with it, so a chart
// fetched with one tenant's password is never served to another tenant's
// HelmRepository that merely names its digest, nor to an anonymous request
// for the same URL: those fetch from their own source, and fail there. A
// public repository shares only with itself, because where the operator can
// connect is a credential of its own (a repository on an internal network).
// Compute it once per fetch: it hashes the credentials.
func (r *Repository) cacheScope() string {
	return normalizeURL(r.URL) + "\x00" + r.Credentials.fingerprint()
}

// normalizeURL makes URLs that name the same repository equal: scheme and
// host in lower case, no trailing slash, no fragment.
func normalizeURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return raw
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath, u.Fragment, u.RawFragment = "", "", ""
	return u.String()
}
