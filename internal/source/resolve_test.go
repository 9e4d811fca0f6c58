package source

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestResolvePath(t *testing.T) {
	artifact := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(artifact, "addons/base/hr.yaml"), "x")
	writeFile(t, filepath.Join(artifact, "charts/podinfo-6.0.0.tgz"), "x")
	writeFile(t, filepath.Join(outside, "secret.yaml"), "x")
	// Fetch never creates links; these stand for a directory from elsewhere.
	mustSymlink(t, outside, filepath.Join(artifact, "escape"))
	mustSymlink(t, "../../..", filepath.Join(artifact, "addons/up"))
	mustSymlink(t, "base", filepath.Join(artifact, "addons/alias"))

	tests := []struct {
		path     string
		want     string // relative to the artifact
		notFound bool
		unsafe   string
	}{
		{path: "./addons/base", want: "addons/base"},
		{path: "addons/base/", want: "addons/base"},
		{path: "./charts/podinfo-6.0.0.tgz", want: "charts/podinfo-6.0.0.tgz"},
		{path: "", want: "."},
		{path: ".", want: "."},
		{path: "./", want: "."},
		{path: "./addons/alias", want: "addons/alias"},
		{path: "./addons/missing", notFound: true},
		{path: "./addons/base/hr.yaml/x", notFound: true},
		{path: "../outside", unsafe: "must not contain '..'"},
		{path: "./addons/../../x", unsafe: "must not contain '..'"},
		{path: "./addons/../addons/base", unsafe: "must not contain '..'"},
		{path: "/etc", unsafe: "must be relative to the artifact root, e.g. ./etc"},
		{path: "./escape/secret.yaml", unsafe: "symbolic link"},
		{path: "./escape", unsafe: "symbolic link"},
		{path: "./addons/up", unsafe: "symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)

			got, err := ResolvePath(artifact, tt.path)

			switch {
			case tt.notFound:
				var notFound *PathNotFoundError
				g.Expect(errors.As(err, &notFound)).To(BeTrue(), "got %v", err)
				g.Expect(notFound.Path).To(Equal(tt.path))
				g.Expect(err).To(MatchError("path " + tt.path + " not found in artifact"))
			case tt.unsafe != "":
				var unsafe *UnsafePathError
				g.Expect(errors.As(err, &unsafe)).To(BeTrue(), "got %v", err)
				g.Expect(unsafe.Path).To(Equal(tt.path))
				g.Expect(err).To(MatchError(ContainSubstring(tt.unsafe)))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(filepath.Join(artifact, filepath.FromSlash(tt.want))))
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
