package chart

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// archive is a downloaded chart archive, kept in the cache. Its bytes are
// never changed once made.
type archive struct {
	data   []byte
	digest string // "sha256:<hex>"
}

func newArchive(data []byte) *archive {
	sum := sha256.Sum256(data)
	return &archive{data: data, digest: "sha256:" + hex.EncodeToString(sum[:])}
}

// load parses the archive into a new chart each time, so that callers never
// share one (Helm's actions change the chart they are given).
func (a *archive) load() (*helmchart.Chart, error) {
	return loader.LoadArchive(bytes.NewReader(a.data))
}

// normalizeDigest turns an index digest (bare hex, sometimes prefixed) into
// our "sha256:<hex>" form; "" stays "".
func normalizeDigest(d string) string {
	d = strings.ToLower(strings.TrimSpace(d))
	if d == "" {
		return ""
	}
	return "sha256:" + strings.TrimPrefix(d, "sha256:")
}
