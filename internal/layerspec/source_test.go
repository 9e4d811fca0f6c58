package layerspec

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSkippedLinksIn(t *testing.T) {
	skipped := []string{"addons/apps/leak.yaml", "addons/apps/sub/escape", "addons/outside", "README.md",
		"addons/apps/a", "addons/apps/b"}
	tests := []struct {
		path       string
		warning    string
		pathIsLink bool
	}{
		{path: "./addons/apps", warning: "4 symbolic links in the layer's directory were skipped, not followed: " +
			"addons/apps/leak.yaml, addons/apps/sub/escape, addons/apps/a, …"},
		{path: "./addons/base"},
		{path: "./addons/outside", pathIsLink: true},
		{path: "addons/outside/deeper", pathIsLink: true},
		{path: "./", warning: "6 symbolic links in the layer's directory were skipped, not followed: " +
			"addons/apps/leak.yaml, addons/apps/sub/escape, addons/outside, …"},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		got := skippedLinksIn(skipped, tt.path)
		g.Expect(got.warning).To(Equal(tt.warning), tt.path)
		g.Expect(got.pathIsLink).To(Equal(tt.pathIsLink), tt.path)
	}
	g := NewWithT(t)
	g.Expect(skippedLinksIn(nil, "./addons")).To(Equal(layerLinks{}))
	g.Expect(skippedLinksIn([]string{"addons/x/y"}, "./addons/x").warning).To(
		Equal("1 symbolic links in the layer's directory were skipped, not followed: addons/x/y"))
}

// TestSourceKind_AcceptsFluxAndKraanSpellings: Kraan users wrote source kinds
// as resource.group; each must read the same source as the Kind.
func TestSourceKind_AcceptsFluxAndKraanSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"":              "GitRepository",
		"GitRepository": "GitRepository",
		"gitrepositories.source.toolkit.fluxcd.io": "GitRepository",
		"OCIRepository": "OCIRepository",
		"ocirepositories.source.toolkit.fluxcd.io": "OCIRepository",
		"Bucket":                           "Bucket",
		"buckets.source.toolkit.fluxcd.io": "Bucket",
	} {
		t.Run(in, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(SourceKind(in)).To(Equal(want))
			obj, err := NewSourceObject(in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fmt.Sprintf("%T", obj)).To(Equal("*v1." + want))
		})
	}
}
