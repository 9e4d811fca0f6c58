package chart

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
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

// Keys of a HelmRepository's secretRef, as Flux reads them.
const (
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
	SecretKeyCA       = "ca.crt"
	SecretKeyCert     = "tls.crt"
	SecretKeyKey      = "tls.key"
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
	// Credentials are read from spec.secretRef; nil means anonymous.
	Credentials *Credentials
	// Suspended is spec.suspend: the index or tag list last fetched is used
	// as it is, as a suspended source keeps serving its last artifact in
	// Flux. Only a repository never fetched is asked.
	Suspended bool
}

// Credentials are a HelmRepository's basic auth and TLS material.
type Credentials struct {
	// Username and Password for basic auth; both or neither.
	Username string
	Password string
	// CA is a PEM bundle trusted in addition to the system's roots.
	CA []byte
	// Cert and Key are a PEM client certificate and key; both or neither.
	Cert []byte
	Key  []byte
}

// CredentialsFromSecret reads credentials from the data of a HelmRepository's
// secretRef (keys username, password, ca.crt, tls.crt, tls.key). It returns
// nil for a Secret with none of them, and an error naming the key for half a
// pair.
func CredentialsFromSecret(data map[string][]byte) (*Credentials, error) {
	c := &Credentials{
		Username: string(data[SecretKeyUsername]),
		Password: string(data[SecretKeyPassword]),
		CA:       data[SecretKeyCA],
		Cert:     data[SecretKeyCert],
		Key:      data[SecretKeyKey],
	}
	if (c.Username == "") != (c.Password == "") {
		return nil, fmt.Errorf("secret must hold both %q and %q, or neither", SecretKeyUsername, SecretKeyPassword)
	}
	if (len(c.Cert) == 0) != (len(c.Key) == 0) {
		return nil, fmt.Errorf("secret must hold both %q and %q, or neither", SecretKeyCert, SecretKeyKey)
	}
	if c.empty() {
		return nil, nil
	}
	return c, nil
}

func (c *Credentials) empty() bool {
	return c == nil || (c.Username == "" && len(c.CA) == 0 && len(c.Cert) == 0)
}

// fingerprint identifies the credentials without holding them, so cache keys
// can keep one tenant's private index from being served to another with
// different (or no) credentials. "" means anonymous.
func (c *Credentials) fingerprint() string {
	if c.empty() {
		return ""
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(c.Username), []byte(c.Password), c.CA, c.Cert, c.Key} {
		// Length prefixes keep ("ab","c") and ("a","bc") apart.
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// tlsFingerprint identifies only the TLS material, which selects the HTTP
// transport; basic auth is set per request.
func (c *Credentials) tlsFingerprint() string {
	if c == nil || (len(c.CA) == 0 && len(c.Cert) == 0) {
		return ""
	}
	return (&Credentials{CA: c.CA, Cert: c.Cert, Key: c.Key}).fingerprint()
}

// tlsConfig builds the client TLS configuration; nil means Go's default.
func (c *Credentials) tlsConfig() (*tls.Config, error) {
	if c.tlsFingerprint() == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(c.CA) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(c.CA) {
			return nil, fmt.Errorf("secret key %q holds no PEM certificate", SecretKeyCA)
		}
		cfg.RootCAs = pool
	}
	if len(c.Cert) > 0 {
		pair, err := tls.X509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("secret keys %q and %q: %w", SecretKeyCert, SecretKeyKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
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

// sameHost reports whether target is on the repository's scheme and host:
// basic auth goes there only, as Helm does unless pass_credentials_all is set,
// so an index cannot make us send credentials to another server.
func (r *Repository) sameHost(target string) bool {
	a, errA := url.Parse(r.URL)
	b, errB := url.Parse(target)
	return errors.Join(errA, errB) == nil && a.Scheme == b.Scheme && a.Host == b.Host
}
