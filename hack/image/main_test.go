package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
)

// bundleLayout writes a bundle image of the repository's bundle/ (with a
// made-up operator digest: pushing does not look inside) as an OCI layout.
func bundleLayout(t *testing.T) string {
	t.Helper()
	bundleDir := filepath.Join("..", "..", "bundle")
	from, err := imagebuild.OperatorImageRef(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := imagebuild.NewPin(from, from, v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	m := imagebuild.Metadata{Source: source, Version: "0.1.0", Revision: "test", Created: time.Unix(0, 0)}
	if _, err := imagebuild.BuildBundle(bundleDir, pin, dir, "example.com/bundle:v0.1.0", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// registry serves an in-memory OCI registry over plain HTTP on 127.0.0.1,
// through reject (nil: no rejection), and returns its host:port.
func registry(t *testing.T, reject func(*http.Request) int) string {
	t.Helper()
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reject != nil {
			if code := reject(r); code != 0 {
				http.Error(w, "<html><body>rejected by the test\n</body></html>", code)
				return
			}
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// rejectManifestPuts answers code to every PUT of a manifest: the blobs
// upload, the manifest (and so the tag) does not.
func rejectManifestPuts(code int) func(*http.Request) int {
	return func(r *http.Request) int {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
			return code
		}
		return 0
	}
}

func push(layout, ref string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), []string{"push", "--layout", layout, "--image", ref}, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestPush_Succeeds is the control for the failure tests: a registry that
// accepts the push gets the tag, and the command says so.
func TestPush_Succeeds(t *testing.T) {
	g := NewWithT(t)
	layout := bundleLayout(t)
	ref := registry(t, nil) + "/kraan-io/kraan-operator-bundle:v0.1.0"
	code, stdout, stderr := push(layout, ref)
	g.Expect(code).To(Equal(0), stderr)
	g.Expect(stdout).To(MatchRegexp(`^pushed \S+/kraan-io/kraan-operator-bundle@sha256:[0-9a-f]{64}\n$`))
	g.Expect(tagExists(t, ref)).To(BeTrue())
}

// TestPush_Fails: an unreachable registry, or one that rejects the manifest
// with 403 or 500, gives one line on stderr naming the image and the fix, a
// non-zero exit, nothing reported as pushed — and no tag in the registry.
func TestPush_Fails(t *testing.T) {
	closed := func() string {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return addr
	}
	for _, tc := range []struct {
		name   string
		host   func(t *testing.T) string
		tagged bool // whether the registry answers tag queries afterwards
	}{
		{name: "unreachable", host: func(*testing.T) string { return closed() }},
		{name: "forbidden", host: func(t *testing.T) string { return registry(t, rejectManifestPuts(http.StatusForbidden)) }, tagged: true},
		{name: "server error", host: func(t *testing.T) string { return registry(t, rejectManifestPuts(http.StatusInternalServerError)) }, tagged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			layout := bundleLayout(t)
			ref := tc.host(t) + "/kraan-io/kraan-operator-bundle:v0.1.0"
			code, stdout, stderr := push(layout, ref)
			g.Expect(code).To(Equal(1))
			g.Expect(stdout).NotTo(ContainSubstring("pushed"))
			g.Expect(stderr).To(MatchRegexp(`^image: pushing \S+ to ` + regexp.QuoteMeta(ref) + ` failed \(check IMAGE_REGISTRY, [^\n]*\n$`))
			g.Expect(stderr).NotTo(ContainSubstring("<html>"))
			t.Log(stderr)
			if tc.tagged {
				g.Expect(tagExists(t, ref)).To(BeFalse(), "a rejected push leaves no tag")
			}
		})
	}
}

func tagExists(t *testing.T, ref string) bool {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.Head(tag)
	return err == nil
}

// TestRun_RefusesBadInput: a missing flag or an unknown command is an error
// naming what is wrong.
func TestRun_RefusesBadInput(t *testing.T) {
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	g.Expect(run(context.Background(), []string{"bundle", "--out", "x"}, &out, &errOut)).To(Equal(1))
	g.Expect(errOut.String()).To(Equal("image: --out and --image are required\n"))
	errOut.Reset()
	g.Expect(run(context.Background(), []string{"nope"}, &out, &errOut)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring(`unknown command "nope"`))
}
