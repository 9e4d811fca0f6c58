package source

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
)

// ErrInvalidArtifact is wrapped by Fetch when the artifact itself cannot be
// used (no URL, no digest, unsupported digest algorithm). Retrying does not
// help until the source publishes a different artifact.
var ErrInvalidArtifact = errors.New("invalid artifact")

// Artifact is what Fetch needs from a Flux source's status.artifact. It is a
// plain struct so callers (and tests) do not need the Flux API types; use
// FromFlux to convert.
type Artifact struct {
	// URL is the HTTP address source-controller serves the tarball at.
	URL string
	// Revision is the human-readable revision, e.g. "main@sha1:…"; used in
	// messages only.
	Revision string
	// Digest is "<algorithm>:<hex>" (OCI digest format), e.g. "sha256:…".
	Digest string
	// Size is the tarball size in bytes, when the source reports it.
	Size *int64
}

// FromFlux converts a Flux source's status.artifact (as returned by
// GitRepository.GetArtifact, OCIRepository.GetArtifact and
// Bucket.GetArtifact). A nil artifact converts to the zero Artifact, which
// Fetch rejects with ErrInvalidArtifact.
func FromFlux(a *fluxmeta.Artifact) Artifact {
	if a == nil {
		return Artifact{}
	}
	return Artifact{URL: a.URL, Revision: a.Revision, Digest: a.Digest, Size: a.Size}
}

// digest is a parsed and validated artifact digest.
type digest struct {
	algo string // "sha256", "sha384" or "sha512"
	hex  string // lower-case, length checked against algo
}

// hashes lists the algorithms Flux can be configured with that the standard
// library implements. BLAKE3 (also accepted by source-controller) is not
// supported: it is not in the standard library and not Flux's default.
var hashes = map[string]func() hash.Hash{
	"sha256": sha256.New,
	"sha384": sha512.New384,
	"sha512": sha512.New,
}

// parseDigest validates s strictly because its parts become a directory
// name: only a known algorithm and hex of the right length get through.
func parseDigest(s string) (digest, error) {
	algo, hexPart, ok := strings.Cut(s, ":")
	if !ok {
		return digest{}, fmt.Errorf("%w: digest %q is not in <algorithm>:<hex> form", ErrInvalidArtifact, s)
	}
	newHash, ok := hashes[algo]
	if !ok {
		return digest{}, fmt.Errorf("%w: digest %q uses unsupported algorithm %q", ErrInvalidArtifact, s, algo)
	}
	hexPart = strings.ToLower(hexPart)
	raw, err := hex.DecodeString(hexPart)
	if err != nil || len(raw) != newHash().Size() {
		return digest{}, fmt.Errorf("%w: digest %q has a malformed %s value", ErrInvalidArtifact, s, algo)
	}
	return digest{algo: algo, hex: hexPart}, nil
}

// String returns the canonical "<algo>:<hex>" form, as GC reports it.
func (d digest) String() string { return d.algo + ":" + d.hex }

// key is the digest's name on disk: ':' is avoided because it is awkward in
// paths (and not allowed on some file systems).
func (d digest) key() string { return d.algo + "-" + d.hex }

// newHash returns a hash for d's algorithm; parseDigest guarantees it exists.
func (d digest) newHash() hash.Hash { return hashes[d.algo]() }

// digestFromKey parses a directory name written by key; ok is false for
// anything else found in the root.
func digestFromKey(name string) (digest, bool) {
	algo, hexPart, ok := strings.Cut(name, "-")
	if !ok {
		return digest{}, false
	}
	d, err := parseDigest(algo + ":" + hexPart)
	if err != nil || d.hex != hexPart {
		return digest{}, false
	}
	return d, true
}
