package imagebuild

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Pin replaces an image reference by tag, as bundle/ and catalog/ carry it,
// with the reference by digest of the image just built.
type Pin struct {
	From, To string
}

// Pins are applied to every string of a manifest that equals a From: whole
// values only, so a Pin never rewrites part of a description.
type Pins []Pin

// NewPin pins the image named ref (repository and tag, where it is pushed) to
// digest: From is the reference by tag that bundle/ or catalog/ carries, To is
// ref's repository at digest.
func NewPin(from, ref string, digest v1.Hash) (Pin, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return Pin{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	return Pin{From: from, To: r.Context().Digest(digest.String()).String()}, nil
}

// Apply returns v with every string equal to a Pin's From replaced by its To,
// and how many were replaced. v is what encoding/json or sigs.k8s.io/yaml
// decode into an any.
func (ps Pins) Apply(v any) (any, int) {
	switch t := v.(type) {
	case string:
		for _, p := range ps {
			if t == p.From {
				return p.To, 1
			}
		}
		return t, 0
	case map[string]any:
		n := 0
		for k, e := range t {
			var c int
			t[k], c = ps.Apply(e)
			n += c
		}
		return t, n
	case []any:
		n := 0
		for i, e := range t {
			var c int
			t[i], c = ps.Apply(e)
			n += c
		}
		return t, n
	default:
		return v, 0
	}
}
