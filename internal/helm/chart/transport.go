package chart

import (
	"io"
	"net/http"
	"net/url"
	"strings"
)

// cappedTransport bounds every response body a registry sends: blobs at
// blobLimit (the chart cap), everything else (manifests, tag-list pages,
// token responses) at metadataLimit. A Content-Length over the cap is refused
// before the body is read; a body that runs past the cap fails the read at
// limit+1 bytes. It is the floor under the checks of declared sizes, which a
// hostile registry can lie about.
type cappedTransport struct {
	base                     http.RoundTripper
	metadataLimit, blobLimit int64
}

// RoundTrip sends req and caps the response's body.
func (t *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method == http.MethodHead {
		return resp, err
	}
	limit, flag := t.metadataLimit, FlagMaxManifestSize
	if isBlob(req) {
		limit, flag = t.blobLimit, FlagMaxChartSize
	}
	what := "the response of " + withoutQuery(req.URL)
	if err := checkDeclared(what, resp.ContentLength, limit, flag); err != nil {
		resp.Body.Close()
		return nil, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: limit,
		err: &LimitError{What: what, Declared: sizeUnknown, Limit: limit, Flag: flag}}
	return resp, nil
}

// isBlob reports whether req asks for a blob, or follows a redirect from a
// request for one: registries (GHCR, Docker Hub, ECR) send blobs from
// storage elsewhere, under paths of its own.
func isBlob(req *http.Request) bool {
	for r := req; r != nil; r = r.Response.Request {
		if strings.Contains(r.URL.Path, "/blobs/") {
			return true
		}
		if r.Response == nil {
			return false
		}
	}
	return false
}

// withoutQuery is a URL without its query, which can hold a token request's
// parameters, for messages.
func withoutQuery(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

// cappedBody yields at most left bytes, then err if the body has more.
type cappedBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, b.err
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
