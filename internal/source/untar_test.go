package source

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestStore_Fetch_linksCannotEscape proves that links in an artifact give
// no way to read or write outside the artifact directory: they are skipped.
func TestStore_Fetch_linksCannotEscape(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{})
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "secret")
	a := srv.add("rev1", tarball(t,
		symlink("passwd", "/etc/passwd"),
		symlink("up", "../../x"),
		symlink("secret", filepath.Join(outside, "secret")),
		entry{name: "hard", typeflag: tar.TypeLink, linkname: "/etc/passwd"},
		// A link to a directory outside, then a file "inside" it: the
		// classic two-step escape.
		symlink("out", outside),
		file("out/pwned", "pwned"),
		file("kept.yaml", "kept"),
	))

	got, err := s.Fetch(context.Background(), a)
	g.Expect(err).NotTo(HaveOccurred())

	for _, name := range []string{"passwd", "up", "secret", "hard"} {
		_, err := os.ReadFile(filepath.Join(got, name))
		g.Expect(errors.Is(err, fs.ErrNotExist)).To(BeTrue(), "%s must not be readable, got %v", name, err)
	}
	g.Expect(filepath.Join(outside, "pwned")).NotTo(BeAnExistingFile(), "nothing is written through a link")
	fi, err := os.Lstat(filepath.Join(got, "out"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.IsDir()).To(BeTrue(), "out is a plain directory, not a link")
	g.Expect(os.ReadFile(filepath.Join(got, "out", "pwned"))).To(BeEquivalentTo("pwned"))
	g.Expect(filepath.Join(got, "kept.yaml")).To(BeARegularFile())
	g.Expect(entries(t, outside)).To(ConsistOf("secret"))

	// The skipped links are reported, also by a restarted store.
	want := []string{"passwd", "up", "secret", "hard", "out"}
	g.Expect(s.SkippedLinks(a)).To(Equal(want))
	restarted, err := New(s.Root(), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(restarted.Fetch(context.Background(), a)).To(Equal(got))
	g.Expect(restarted.SkippedLinks(a)).To(Equal(want))
}

func TestStore_SkippedLinks_noneInAPlainArtifact(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	_, err := s.SkippedLinks(a)
	g.Expect(err).To(HaveOccurred(), "an artifact not fetched yet has no marker")
	_, err = s.Fetch(context.Background(), a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.SkippedLinks(a)).To(BeEmpty())
}

func TestUntar_permissions(t *testing.T) {
	g := NewWithT(t)
	dst := t.TempDir()
	body := tarball(t,
		entry{name: "bin/run.sh", body: "#!/bin/sh", typeflag: tar.TypeReg, mode: 0o4777},
		entry{name: "ro", typeflag: tar.TypeDir, mode: 0o500},
		entry{name: "ro/values.yaml", body: "x", typeflag: tar.TypeReg, mode: 0o400},
	)

	_, err := untar(bytes.NewReader(body), dst, limits{maxBytes: 1 << 20, maxFiles: 10})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mode(t, filepath.Join(dst, "bin/run.sh"))).To(Equal(os.FileMode(0o755)), "setuid and world-write are dropped")
	g.Expect(mode(t, filepath.Join(dst, "ro"))).To(Equal(os.FileMode(0o700)|os.ModeDir), "owner can always clean up")
	g.Expect(mode(t, filepath.Join(dst, "ro/values.yaml"))).To(Equal(os.FileMode(0o600)))
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestUntar_ignoresPAXGlobalHeader(t *testing.T) {
	g := NewWithT(t)
	dst := t.TempDir()
	var buf bytes.Buffer
	// `git archive` starts with a global header carrying the commit id.
	tw := tar.NewWriter(&buf)
	g.Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": "0123abcd"}})).To(Succeed())
	g.Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "a.yaml", Size: 1, Mode: 0o644})).To(Succeed())
	_, _ = tw.Write([]byte("a"))
	g.Expect(tw.Close()).To(Succeed())
	body := gzipBytes(t, buf.Bytes())

	_, err := untar(bytes.NewReader(body), dst, limits{maxBytes: 1 << 20, maxFiles: 1})

	g.Expect(err).NotTo(HaveOccurred(), "the global header is not counted as an entry")
	g.Expect(entries(t, dst)).To(ConsistOf("a.yaml"))
}

func TestUntar_duplicateEntriesLastWins(t *testing.T) {
	g := NewWithT(t)
	dst := t.TempDir()
	body := tarball(t, dir("./"), file("./a.yaml", "first version"), file("a.yaml", "second"))

	_, err := untar(bytes.NewReader(body), dst, limits{maxBytes: 1 << 20, maxFiles: 10})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.ReadFile(filepath.Join(dst, "a.yaml"))).To(BeEquivalentTo("second"))
}

func TestCleanEntryName(t *testing.T) {
	tests := []struct {
		name    string
		want    string
		wantErr string
	}{
		{name: "a.yaml", want: "a.yaml"},
		{name: "./addons/base/", want: "addons/base"},
		{name: "./", want: "."},
		{name: "a//b/./c", want: "a/b/c"},
		{name: "..data", want: "..data"},
		{name: "a/..b/c..", want: "a/..b/c.."},
		{name: "", wantErr: "empty name"},
		{name: "..", wantErr: "escapes"},
		{name: "../evil", wantErr: "escapes"},
		{name: "a/../../evil", wantErr: "escapes"},
		{name: "a/../b", wantErr: "escapes"},
		{name: "a/..", wantErr: "escapes"},
		{name: "/etc/passwd", wantErr: "absolute"},
		{name: "//etc/passwd", wantErr: "absolute"},
		{name: `..\evil`, wantErr: "backslash"},
		{name: "a\x00b", wantErr: "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got, err := cleanEntryName(tt.name)

			if tt.wantErr != "" {
				var unsafe *UnsafeArchiveError
				g.Expect(errors.As(err, &unsafe)).To(BeTrue(), "got %v", err)
				g.Expect(unsafe.Entry).To(Equal(tt.name))
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(filepath.FromSlash(tt.want)))
		})
	}
}

// FuzzCleanEntryName checks the property the extractor relies on: a name
// that is accepted joins to a path inside the target directory.
func FuzzCleanEntryName(f *testing.F) {
	for _, seed := range []string{
		"a.yaml", "./a/b/", "../evil", "a/../../b", "/abs", "..", ".", "", "a/./..", `a\..\b`, "...", "a/.../b",
	} {
		f.Add(seed)
	}
	root := filepath.FromSlash("/store/tmp")
	f.Fuzz(func(t *testing.T, name string) {
		clean, err := cleanEntryName(name)
		if err != nil {
			var unsafe *UnsafeArchiveError
			if !errors.As(err, &unsafe) || unsafe.Entry != name {
				t.Fatalf("%q: error %v is not an UnsafeArchiveError naming the entry", name, err)
			}
			return
		}
		joined := filepath.Join(root, clean)
		if !within(root, joined) {
			t.Fatalf("%q accepted as %q but joins to %q, outside %q", name, clean, joined, root)
		}
		if strings.Contains("/"+name+"/", "/../") {
			t.Fatalf("%q has a '..' element but was accepted", name)
		}
	})
}
