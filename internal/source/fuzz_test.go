package source

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzExtract feeds arbitrary bytes to the Store's extraction of a downloaded
// archive (extract, which runs untar into a temporary directory and renames
// it into place). It proves that extraction never panics, never writes
// outside the store root, never creates a link, and, as the package
// documents, is all or nothing: on error the root holds neither the
// artifact's directory, nor its marker, nor a temporary leftover.
func FuzzExtract(f *testing.F) {
	f.Add(tarball(f, dir("addons/"), file("addons/a.yaml", "kind: ConfigMap\n")))
	f.Add(tarball(f, file("../x", "escape")))
	f.Add(tarball(f, file("/abs", "absolute")))
	f.Add(tarball(f, symlink("out", "../../.."), file("out/pwned", "pwned")))
	f.Add(tarball(f, entry{name: "hard", typeflag: tar.TypeLink, linkname: "/etc/passwd"}))
	f.Add(tarball(f))
	f.Add([]byte("not a tarball"))
	f.Fuzz(func(t *testing.T, archive []byte) {
		parent := t.TempDir()
		path := filepath.Join(parent, "artifact.tar.gz")
		if err := os.WriteFile(path, archive, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := New(filepath.Join(parent, "store"), Options{MaxUntarBytes: 1 << 16, MaxFiles: 64})
		if err != nil {
			t.Fatal(err)
		}
		d, err := parseDigest(sha256Of(archive))
		if err != nil {
			t.Fatal(err)
		}

		_, extractErr := s.extract(path, d)

		err = filepath.WalkDir(parent, func(p string, e fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case e.Type()&fs.ModeSymlink != 0:
				t.Errorf("extraction created a link: %s", p)
			case p != parent && p != path && !within(s.Root(), p):
				t.Errorf("extraction wrote %s, outside the store root %s", p, s.Root())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{d.key(), d.key() + markerSuffix}
		if extractErr != nil {
			want = nil
		}
		if got := entries(t, s.Root()); !slices.Equal(got, want) {
			t.Fatalf("extract returned %v; the store root holds %q, want %q", extractErr, got, want)
		}
	})
}
