package chart

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
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

// readLimited reads a response body, failing rather than filling memory when
// a server sends more than limit bytes.
func readLimited(r io.Reader, limit int64, url string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, &UnreachableError{URL: url, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", url, limit)
	}
	return data, nil
}
