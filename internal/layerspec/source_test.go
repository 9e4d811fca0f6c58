package layerspec

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
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

// TestSourceNotFound_NamesTheDefaultNamespaceWhenTheLayerNamesNone: issue
// #43. Kraan read a layer with an empty source.namespace from its own
// namespace (gotk-system); the operator reads its default source namespace.
// A layer that finds no source there says which namespace was read and how
// to point the operator at Kraan's, instead of a bare "not found".
func TestSourceNotFound_NamesTheDefaultNamespaceWhenTheLayerNamesNone(t *testing.T) {
	g := NewWithT(t)
	layer := &kraanv1.AddonsLayer{}
	layer.Spec.Source.Name = "addons"
	msg := sourceNotFound(layer, "GitRepository/kraan-system/addons", "kraan-system")
	g.Expect(msg).To(HavePrefix("layer source: GitRepository/kraan-system/addons not found; spec.source.namespace is empty"))
	g.Expect(msg).To(ContainSubstring(`default source namespace "kraan-system"`))
	g.Expect(msg).To(ContainSubstring("default-source-namespace"))
	g.Expect(msg).To(ContainSubstring("gotk-system"))

	layer.Spec.Source.Namespace = "flux-system"
	g.Expect(sourceNotFound(layer, "GitRepository/flux-system/addons", "flux-system")).
		To(Equal("layer source: GitRepository/flux-system/addons not found"))
}
