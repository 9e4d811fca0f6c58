package source

import (
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
)

func TestStore_Fetch_extractsArtifact(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t,
		dir("addons/"), dir("addons/base/"),
		file("addons/base/hr.yaml", "kind: HelmRelease\n"),
		file("charts/podinfo/Chart.yaml", "name: podinfo\n"), // no dir entries for its parents
	))

	got, err := s.Fetch(context.Background(), a)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(filepath.Join(s.Root(), keyOf(a.Digest))))
	g.Expect(os.ReadFile(filepath.Join(got, "addons/base/hr.yaml"))).To(BeEquivalentTo("kind: HelmRelease\n"))
	g.Expect(os.ReadFile(filepath.Join(got, "charts/podinfo/Chart.yaml"))).To(BeEquivalentTo("name: podinfo\n"))
	g.Expect(entries(t, s.Root())).To(ConsistOf(keyOf(a.Digest), keyOf(a.Digest)+markerSuffix),
		"no temporary files are left behind")
}

func TestStore_Fetch_cachedDigestDoesNoRequest(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))

	first, err := s.Fetch(context.Background(), a)
	g.Expect(err).NotTo(HaveOccurred())
	second, err := s.Fetch(context.Background(), a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(Equal(first))

	// A new Store on the same root (an operator restart) trusts the marker.
	restarted, err := New(s.Root(), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	third, err := restarted.Fetch(context.Background(), a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(third).To(Equal(first))

	g.Expect(srv.requests.Load()).To(BeEquivalentTo(1))
}

func TestStore_Fetch_concurrentCallsShareOneDownload(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	release := srv.hold()
	defer release()

	const callers = 20
	dirs := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { dirs[i], errs[i] = s.Fetch(context.Background(), a) })
	}
	// Every caller plus the one shared download must be in flight before
	// the response is released, so a missing singleflight would show.
	g.Eventually(func() int { return s.inflightCount(a.Digest) }).Should(Equal(callers + 1))
	release()
	wg.Wait()

	for i := range callers {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(dirs[i]).To(Equal(dirs[0]))
	}
	g.Expect(srv.requests.Load()).To(BeEquivalentTo(1))
}

func TestStore_Fetch_cancelledCallerDoesNotFailOthers(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	release := srv.hold()
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	cancelledErr := make(chan error, 1)
	go func() { _, err := s.Fetch(ctx, a); cancelledErr <- err }()
	<-srv.started
	otherDir := make(chan string, 1)
	go func() { d, _ := s.Fetch(context.Background(), a); otherDir <- d }()
	g.Eventually(func() int { return s.inflightCount(a.Digest) }).Should(Equal(3))

	cancel()
	g.Expect(<-cancelledErr).To(MatchError(context.Canceled))
	release()
	g.Expect(<-otherDir).To(BeADirectory())
	g.Expect(srv.requests.Load()).To(BeEquivalentTo(1))
}

func TestStore_Fetch_digestAlgorithms(t *testing.T) {
	body := tarball(t, file("a.yaml", "a"))
	sum384 := sha512.Sum384(body)
	sum512 := sha512.Sum512(body)
	tests := []struct {
		name   string
		digest string
	}{
		{name: "sha256", digest: sha256Of(body)},
		{name: "sha256 upper-case hex", digest: "sha256:" + strings.ToUpper(strings.TrimPrefix(sha256Of(body), "sha256:"))},
		{name: "sha384", digest: "sha384:" + hex.EncodeToString(sum384[:])},
		{name: "sha512", digest: "sha512:" + hex.EncodeToString(sum512[:])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newArtifactServer(t)
			s, _ := newTestStore(t, Options{})
			a := srv.add("rev1", body)
			a.Digest = tt.digest

			got, err := s.Fetch(context.Background(), a)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(filepath.Base(got)).To(Equal(strings.ToLower(strings.Replace(tt.digest, ":", "-", 1))))
			g.Expect(filepath.Join(got, "a.yaml")).To(BeARegularFile())
		})
	}
}

func TestStore_Fetch_errors(t *testing.T) {
	good := tarball(t, file("a.yaml", "a"))
	tests := []struct {
		name string
		body []byte
		opts Options
		// edit changes the published artifact before fetching.
		edit  func(a *Artifact)
		check func(g *WithT, err error, a Artifact)
		// requests is how many HTTP requests the failure may take.
		requests int32
	}{
		{
			name:     "digest mismatch",
			body:     good,
			edit:     func(a *Artifact) { a.Digest = sha256Of([]byte("something else")) },
			requests: 1,
			check: func(g *WithT, err error, a Artifact) {
				var mismatch *DigestMismatchError
				g.Expect(errors.As(err, &mismatch)).To(BeTrue(), "got %v", err)
				g.Expect(mismatch.Expected).To(Equal(a.Digest))
				g.Expect(mismatch.Got).To(Equal(sha256Of(good)))
				g.Expect(err.Error()).To(And(ContainSubstring(a.URL), ContainSubstring("tampered or corrupted"),
					ContainSubstring(a.Revision)))
			},
		},
		{
			name:     "HTTP 404",
			body:     good,
			edit:     func(a *Artifact) { a.URL += ".missing" },
			requests: 1,
			check: func(g *WithT, err error, a Artifact) {
				var httpErr *HTTPError
				g.Expect(errors.As(err, &httpErr)).To(BeTrue(), "got %v", err)
				g.Expect(httpErr.StatusCode).To(Equal(404))
				g.Expect(err.Error()).To(And(ContainSubstring(a.URL), ContainSubstring("404")))
			},
		},
		{
			name:     "download larger than limit",
			body:     good,
			opts:     Options{MaxDownloadBytes: int64(len(good)) - 1},
			edit:     func(a *Artifact) { a.Size = nil }, // the body, not the status, must trip it
			requests: 1,
			check:    expectTooLarge(LimitDownloadBytes),
		},
		{
			name:     "reported size larger than limit is refused without a request",
			body:     good,
			opts:     Options{MaxDownloadBytes: int64(len(good)) - 1},
			requests: 0,
			check:    expectTooLarge(LimitDownloadBytes),
		},
		{
			name:     "uncompressed size larger than limit",
			body:     tarball(t, file("a.yaml", "12345"), file("b.yaml", "123456")),
			opts:     Options{MaxUntarBytes: 10, MaxDownloadBytes: 1 << 20},
			requests: 1,
			check:    expectTooLarge(LimitUntarBytes),
		},
		{
			name:     "too many entries",
			body:     tarball(t, dir("d/"), file("d/a", ""), file("d/b", "")),
			opts:     Options{MaxFiles: 2},
			requests: 1,
			check:    expectTooLarge(LimitFiles),
		},
		{
			name:     "parent directory entry",
			body:     tarball(t, file("ok.yaml", "ok"), file("../evil", "pwned")),
			requests: 1,
			check:    expectUnsafe("../evil"),
		},
		{
			name:     "nested parent directory entry",
			body:     tarball(t, file("a/../../evil", "pwned")),
			requests: 1,
			check:    expectUnsafe("a/../../evil"),
		},
		{
			name:     "absolute path entry",
			body:     tarball(t, file("/tmp/evil", "pwned")),
			requests: 1,
			check:    expectUnsafe("/tmp/evil"),
		},
		{
			name:     "character device entry",
			body:     tarball(t, entry{name: "null", typeflag: '3'}),
			requests: 1,
			check:    expectUnsafe("null"),
		},
		{
			name:     "not a gzip tarball",
			body:     []byte("<html>proxy login</html>"),
			requests: 1,
			check: func(g *WithT, err error, _ Artifact) {
				g.Expect(err).To(MatchError(ContainSubstring("not a gzip-compressed tarball")))
			},
		},
		{
			name:  "unsupported digest algorithm",
			body:  good,
			edit:  func(a *Artifact) { a.Digest = "blake3:" + strings.Repeat("0", 64) },
			check: expectInvalid,
		},
		{
			name:  "digest with path characters",
			body:  good,
			edit:  func(a *Artifact) { a.Digest = "sha256:../../etc" },
			check: expectInvalid,
		},
		{
			name:  "no digest",
			body:  good,
			edit:  func(a *Artifact) { a.Digest = "" },
			check: expectInvalid,
		},
		{
			name:  "no URL",
			body:  good,
			edit:  func(a *Artifact) { a.URL = "" },
			check: expectInvalid,
		},
		{
			name:  "not an HTTP URL",
			body:  good,
			edit:  func(a *Artifact) { a.URL = "file:///etc/passwd" },
			check: expectInvalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newArtifactServer(t)
			s, _ := newTestStore(t, tt.opts)
			a := srv.add("rev1", tt.body)
			if tt.edit != nil {
				tt.edit(&a)
			}

			got, err := s.Fetch(context.Background(), a)

			g.Expect(err).To(HaveOccurred())
			g.Expect(got).To(BeEmpty())
			tt.check(g, err, a)
			g.Expect(srv.requests.Load()).To(Equal(tt.requests))
			g.Expect(entries(t, s.Root())).To(BeEmpty(), "nothing is left in the store")
			g.Expect(entries(t, filepath.Dir(s.Root()))).To(ConsistOf("cache"), "nothing is written beside the store")
		})
	}
}

func expectTooLarge(limit Limit) func(*WithT, error, Artifact) {
	return func(g *WithT, err error, _ Artifact) {
		var tooLarge *TooLargeError
		g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "got %v", err)
		g.Expect(tooLarge.Limit).To(Equal(limit))
	}
}

func expectUnsafe(name string) func(*WithT, error, Artifact) {
	return func(g *WithT, err error, _ Artifact) {
		var unsafe *UnsafeArchiveError
		g.Expect(errors.As(err, &unsafe)).To(BeTrue(), "got %v", err)
		g.Expect(unsafe.Entry).To(Equal(name))
		g.Expect(err.Error()).To(ContainSubstring(name))
	}
}

func expectInvalid(g *WithT, err error, _ Artifact) {
	g.Expect(err).To(MatchError(ErrInvalidArtifact))
}

func TestStore_Fetch_hostOverride(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	s, _ := newTestStore(t, Options{HostOverride: addr})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	u, err := url.Parse(a.URL)
	g.Expect(err).NotTo(HaveOccurred())
	u.Host = "source-controller.flux-system.svc.cluster.local." // unresolvable here
	a.URL = u.String()

	got, err := s.Fetch(context.Background(), a)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeADirectory())
	g.Expect(srv.lastHost()).To(Equal(addr))
}

func TestStore_Fetch_replacesIncompleteDirectory(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *Store, key string)
	}{
		{
			name: "directory without marker",
			setup: func(t *testing.T, s *Store, key string) {
				writeFile(t, filepath.Join(s.Root(), key, "partial.yaml"), "half")
			},
		},
		{
			name: "marker without directory",
			setup: func(t *testing.T, s *Store, key string) {
				writeFile(t, filepath.Join(s.Root(), key+markerSuffix), "sha256:whatever")
			},
		},
		{
			name: "marker for another digest",
			setup: func(t *testing.T, s *Store, key string) {
				writeFile(t, filepath.Join(s.Root(), key, "partial.yaml"), "half")
				writeFile(t, filepath.Join(s.Root(), key+markerSuffix), "sha256:0000")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newArtifactServer(t)
			s, _ := newTestStore(t, Options{})
			a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
			tt.setup(t, s, keyOf(a.Digest))

			got, err := s.Fetch(context.Background(), a)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(srv.requests.Load()).To(BeEquivalentTo(1))
			g.Expect(entries(t, got)).To(ConsistOf("a.yaml"))
			g.Expect(os.ReadFile(filepath.Join(s.Root(), keyOf(a.Digest)+markerSuffix))).
				To(BeEquivalentTo(a.Digest + "\n"))
		})
	}
}

func TestNew_removesTemporariesOfACrashedProcess(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join(t.TempDir(), "cache")
	writeFile(t, filepath.Join(root, tmpPrefix+"sha256-abc-123", "half.yaml"), "half")
	writeFile(t, filepath.Join(root, tmpPrefix+"sha256-abc-456.tar.gz"), "half")
	writeFile(t, filepath.Join(root, "unrelated"), "kept")

	_, err := New(root, Options{})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries(t, root)).To(ConsistOf("unrelated"))
}

func TestFromFlux(t *testing.T) {
	g := NewWithT(t)
	size := int64(42)
	in := &fluxmeta.Artifact{URL: "http://sc/x.tar.gz", Revision: "main@sha1:abc", Digest: "sha256:00", Size: &size, Path: "x.tar.gz"}

	g.Expect(FromFlux(in)).To(Equal(Artifact{URL: in.URL, Revision: in.Revision, Digest: in.Digest, Size: &size}))
	g.Expect(FromFlux(nil)).To(Equal(Artifact{}))
}

// writeFile creates path and its parents.
func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
