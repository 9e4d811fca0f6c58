package imagebuild_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
)

var testDigest = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}

func TestNewPin_NamesTheRepositoryAtTheDigest(t *testing.T) {
	g := NewWithT(t)
	p, err := imagebuild.NewPin("ghcr.io/kraan-io/kraan-operator:v0.1.0", "registry.example.com:5000/kraan/kraan-operator:v0.1.0", testDigest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(imagebuild.Pin{
		From: "ghcr.io/kraan-io/kraan-operator:v0.1.0",
		To:   "registry.example.com:5000/kraan/kraan-operator@" + testDigest.String(),
	}))
	_, err = imagebuild.NewPin("x", "Not A Reference", testDigest)
	g.Expect(err).To(MatchError(ContainSubstring(`image reference "Not A Reference"`)))
}

func TestPins_Apply_ReplacesWholeStringsOnly(t *testing.T) {
	g := NewWithT(t)
	var doc any
	g.Expect(yaml.Unmarshal([]byte(`
image: a:v1
description: built from a:v1
list: [a:v1, b:v1, {nested: a:v1}]
`), &doc)).To(Succeed())
	out, n := imagebuild.Pins{{From: "a:v1", To: "a@sha256:1"}}.Apply(doc)
	g.Expect(n).To(Equal(3))
	g.Expect(out).To(Equal(map[string]any{
		"image":       "a@sha256:1",
		"description": "built from a:v1",
		"list":        []any{"a@sha256:1", "b:v1", map[string]any{"nested": "a@sha256:1"}},
	}))
}

func TestPinCSV_PinsAndListsTheOperatorImage(t *testing.T) {
	g := NewWithT(t)
	csv := []byte(`kind: ClusterServiceVersion
metadata: {annotations: {containerImage: "op:v1"}}
spec:
  install: {spec: {deployments: [{spec: {template: {spec: {containers: [{image: "op:v1"}]}}}}]}}
`)
	out, err := imagebuild.PinCSV(csv, imagebuild.Pin{From: "op:v1", To: "op@sha256:1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).NotTo(ContainSubstring("op:v1"))
	g.Expect(strings.Count(string(out), "op@sha256:1")).To(Equal(3))
	g.Expect(string(out)).To(ContainSubstring("relatedImages:\n  - image: op@sha256:1\n    name: kraan-operator\n"))

	_, err = imagebuild.PinCSV(csv, imagebuild.Pin{From: "other:v1", To: "other@sha256:1"})
	g.Expect(err).To(MatchError("the ClusterServiceVersion does not mention the operator image other:v1"))
}

// TestCommittedFiles_NameTheImagesByTag: the pins start from what bundle/
// and catalog/ say, the Makefile's default IMG and BUNDLE_IMG.
func TestCommittedFiles_NameTheImagesByTag(t *testing.T) {
	g := NewWithT(t)
	root := moduleRoot(t)
	op, err := imagebuild.OperatorImageRef(filepath.Join(root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(op).To(MatchRegexp(`^ghcr\.io/kraan-io/kraan-operator:v\d+\.\d+\.\d+$`))
	name, err := imagebuild.BundleName(filepath.Join(root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	b, err := imagebuild.CatalogBundleImage(filepath.Join(root, "catalog"), name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b).To(MatchRegexp(`^ghcr\.io/kraan-io/kraan-operator-bundle:v\d+\.\d+\.\d+$`))
	g.Expect(b).To(HaveSuffix(strings.TrimPrefix(name, "kraan-operator.")), "the bundle of bundle/, not an earlier one")
	_, err = imagebuild.OperatorImageRef(t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("must hold exactly one *.clusterserviceversion.yaml (found 0); run `make bundle`")))
}

// TestNewLayer_DependsOnlyOnTheEntries: the order entries come in does not
// matter, their time does.
func TestNewLayer_DependsOnlyOnTheEntries(t *testing.T) {
	g := NewWithT(t)
	a := imagebuild.File("a", 0o644, []byte("a"))
	b := imagebuild.File("b/c", 0o755, []byte("c"))
	digest := func(mtime time.Time, e ...imagebuild.Entry) v1.Hash {
		l, err := imagebuild.NewLayer(e, mtime)
		g.Expect(err).NotTo(HaveOccurred())
		d, err := l.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		return d
	}
	epoch := time.Unix(0, 0)
	g.Expect(digest(epoch, a, b)).To(Equal(digest(epoch, b, a)))
	g.Expect(digest(epoch, a, b)).NotTo(Equal(digest(epoch.Add(time.Second), a, b)))
}
