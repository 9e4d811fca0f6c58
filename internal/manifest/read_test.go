package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRead_plainRecursiveMultiDocument(t *testing.T) {
	g := NewWithT(t)
	res, err := Read("testdata/plain", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Kustomized).To(BeFalse())
	// Lexical path order, then document order; comments-only documents,
	// README.md and the hidden .github directory are skipped; the List expands.
	g.Expect(ids(res.Objects)).To(Equal([]string{
		"Namespace podinfo",
		"ServiceAccount podinfo/podinfo",
		"ConfigMap podinfo/podinfo-config",
		"Deployment podinfo/podinfo",
		"Service podinfo/podinfo",
	}))
	replicas := res.Objects[3].Object["spec"].(map[string]any)["replicas"]
	g.Expect(replicas).To(Equal(int64(2)), "numbers are int64, as unstructured objects require")
}

func TestRead_sameInputSameOutput(t *testing.T) {
	g := NewWithT(t)
	first, err := Read("testdata/plain", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	for range 5 {
		again, err := Read("testdata/plain", Options{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.Objects).To(Equal(first.Objects))
	}
}

func TestRead_kustomizeWithPatchAndNamePrefix(t *testing.T) {
	g := NewWithT(t)
	res, err := Read("testdata/kustomize/layer", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Kustomized).To(BeTrue())
	g.Expect(ids(res.Objects)).To(Equal([]string{"Deployment podinfo/dev-podinfo", "Service podinfo/dev-podinfo"}))
	g.Expect(res.Objects[0].Object["spec"].(map[string]any)["replicas"]).To(Equal(int64(3)))
}

func TestRead_kustomizationFileNames(t *testing.T) {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dir := writeFiles(t, map[string]string{
				name:      "namePrefix: k-\nresources: [cm.yaml]\n",
				"cm.yaml": configMap("cm"),
				// Not listed in the kustomization, so not part of the layer.
				"extra.yaml": configMap("extra"),
			})
			res, err := Read(dir, Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ids(res.Objects)).To(Equal([]string{"ConfigMap default/k-cm"}))
		})
	}
}

func TestRead_kustomizeOutsideRoot(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		root    string
		wantErr string
		want    []string
	}{
		{name: "file above the kustomization", dir: "file-escape",
			wantErr: "security: ../outside.yaml is outside the layer's source artifact"},
		{name: "file above the kustomization, inside the artifact", dir: "file-escape", root: ".",
			wantErr: "security; file './outside.yaml' is not in or below './file-escape'"},
		{name: "base above the layer, artifact root is the layer", dir: "dir-escape",
			wantErr: "security: ../base is outside the layer's source artifact"},
		{name: "base elsewhere in the artifact", dir: "dir-escape", root: ".",
			want: []string{"ConfigMap default/from-base"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			opts := Options{}
			if tt.root != "" {
				opts.Root = filepath.Join("testdata/kustomize-escape", tt.root)
			}
			res, err := Read(filepath.Join("testdata/kustomize-escape", tt.dir), opts)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				wantDir := "./"
				if tt.root != "" {
					wantDir += tt.dir
				}
				g.Expect(err.Error()).To(HavePrefix("kustomize build of " + wantDir + ": "))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ids(res.Objects)).To(Equal(tt.want))
		})
	}
}

func TestRead_kustomizeSymlinkOutsideRoot(t *testing.T) {
	g := NewWithT(t)
	outside := writeFiles(t, map[string]string{"secret.yaml": configMap("stolen")})
	dir := writeFiles(t, map[string]string{"kustomization.yaml": "resources: [link.yaml]\n"})
	g.Expect(os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "link.yaml"))).To(Succeed())
	_, err := Read(dir, Options{})
	g.Expect(err).To(MatchError(And(HavePrefix("kustomize build of ./: "), ContainSubstring("secret.yaml is outside"))))
}

func TestRead_kustomizeRemoteRefused(t *testing.T) {
	tests := []struct {
		name          string
		kustomization string
		wantErr       string
	}{
		{name: "https resource", kustomization: "resources: [https://example.com/cm.yaml]\n",
			wantErr: `kustomization.yaml: resources entry "https://example.com/cm.yaml" is remote`},
		{name: "github base", kustomization: "resources:\n- github.com/org/repo//deploy?ref=v1\n",
			wantErr: `resources entry "github.com/org/repo//deploy?ref=v1" is remote`},
		{name: "scp style git", kustomization: "components: [git@gitlab.com:org/repo.git]\n",
			wantErr: `components entry "git@gitlab.com:org/repo.git" is remote`},
		{name: "file scheme clone", kustomization: "resources: [file:///etc/repo]\n",
			wantErr: `resources entry "file:///etc/repo" is remote`},
		{name: "patch by URL", kustomization: "resources: [cm.yaml]\npatches:\n- path: https://example.com/p.yaml\n",
			wantErr: `patches entry "https://example.com/p.yaml" is remote`},
		{name: "generator file by URL",
			kustomization: "configMapGenerator:\n- name: x\n  files: [k=http://example.com/f]\n",
			wantErr:       `configMapGenerator/secretGenerator entry "k=http://example.com/f" is remote`},
		{name: "in a local base", kustomization: "resources: [base]\n",
			wantErr: `base/kustomization.yaml: resources entry "https://example.com/x.yaml" is remote`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := writeFiles(t, map[string]string{
				"kustomization.yaml":      tt.kustomization,
				"cm.yaml":                 configMap("cm"),
				"base/kustomization.yaml": "resources: [https://example.com/x.yaml]\n",
			})
			_, err := Read(dir, Options{})
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestRead_kustomizeLocalNamesThatLookRemote(t *testing.T) {
	g := NewWithT(t)
	// A local directory wins over the remote reading of its name, as in kustomize.
	dir := writeFiles(t, map[string]string{
		"kustomization.yaml":                     "resources: [github.com/vendored]\n",
		"github.com/vendored/kustomization.yaml": "resources: [cm.yaml]\n",
		"github.com/vendored/cm.yaml":            configMap("vendored"),
	})
	res, err := Read(dir, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(res.Objects)).To(Equal([]string{"ConfigMap default/vendored"}))
}

// TestRead_kustomizeBuildErrors: each names the file relative to the
// artifact root (and the line for YAML), says it once, in one line, and
// never shows the operator's own directories.
func TestRead_kustomizeBuildErrors(t *testing.T) {
	const head = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	for _, tt := range []struct {
		name, kustomization, want string
	}{
		{"missing resource", head + "resources: [cm.yaml, missing.yaml]\n",
			`kustomize build of ./apps: ./apps/kustomization.yaml lists resource "missing.yaml", which does not exist`},
		{"broken YAML", head + "resources: [cm.yaml\n",
			"kustomize build of ./apps: apps/kustomization.yaml:3: did not find expected ',' or ']'"},
		{"unknown field", head + "resources: [cm.yaml]\nbogus: 1\n",
			`kustomize build of ./apps: apps/kustomization.yaml: json: unknown field "bogus"`},
		{"patch file missing", head + "resources: [cm.yaml]\npatches:\n  - path: nope.yaml\n",
			"kustomize build of ./apps: trouble configuring builtin PatchTransformer: failed to get the patch file from path(nope.yaml)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := writeFiles(t, map[string]string{
				"apps/kustomization.yaml": tt.kustomization,
				"apps/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
			})
			_, err := Read(filepath.Join(root, "apps"), Options{Root: root})
			g.Expect(err).To(HaveOccurred())
			msg := err.Error()
			g.Expect(msg).To(HavePrefix(tt.want))
			g.Expect(msg).NotTo(ContainSubstring(root), "an internal path")
			g.Expect(msg).NotTo(ContainSubstring("\n"))
			g.Expect(strings.Count(msg, "missing.yaml")).To(BeNumerically("<=", 1), "said twice")
		})
	}
}

func TestRead_malformedYAML(t *testing.T) {
	g := NewWithT(t)
	_, err := Read("testdata/malformed", Options{})
	var pe *ParseError
	g.Expect(errors.As(err, &pe)).To(BeTrue(), "got %v", err)
	g.Expect(pe.File).To(Equal("b-bad.yaml"))
	g.Expect(pe.Doc).To(Equal(2))
	g.Expect(pe.Line).To(Equal(10), "the line of `name: broken: here` in the file, not in the document")
	g.Expect(err.Error()).To(HavePrefix("b-bad.yaml:10: document 2: "))
	g.Expect(err.Error()).To(ContainSubstring("mapping values are not allowed"))
	g.Expect(err.Error()).NotTo(ContainSubstring("line 4"))
}

func TestRead_documentWithoutKind(t *testing.T) {
	g := NewWithT(t)
	_, err := Read("testdata/nokind", Options{})
	var pe *ParseError
	g.Expect(errors.As(err, &pe)).To(BeTrue(), "got %v", err)
	g.Expect(pe.File).To(Equal("objects.yaml"))
	g.Expect(pe.Doc).To(Equal(2))
	g.Expect(pe.Line).To(Equal(7))
	g.Expect(err).To(MatchError(errNoKind))
	g.Expect(err.Error()).To(Equal("objects.yaml:7: document 2: not a Kubernetes object: kind missing"))
}

func TestRead_invalidDocuments(t *testing.T) {
	tests := []struct {
		name    string
		content string
		wantErr string
	}{
		{name: "no apiVersion nor kind", content: "metadata:\n  name: x\n",
			wantErr: "x.yaml:1: document 1: not a Kubernetes object: apiVersion and kind missing"},
		{name: "a list, not a mapping", content: "- a\n- b\n",
			wantErr: "x.yaml:1: document 1: not a Kubernetes object: the document is a []interface {}, not a mapping"},
		{name: "list item without kind", content: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n",
			wantErr: "x.yaml:1: document 1: list item 1: not a Kubernetes object: kind missing"},
		{name: "bad separator", content: configMap("a") + "--- x\n" + configMap("b"),
			wantErr: "x.yaml:6: document 2: only a comment may follow a '---' document separator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Read(writeFiles(t, map[string]string{"x.yaml": tt.content}), Options{})
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestRead_emptyDirectory(t *testing.T) {
	g := NewWithT(t)
	res, err := Read(t.TempDir(), Options{Layer: "apps", Version: "1.0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(BeEmpty())
	g.Expect(res.Objects).NotTo(BeNil(), "an empty layer is a result, not an absence of one")
}

func TestRead_directoryWithOnlyIgnoredFiles(t *testing.T) {
	g := NewWithT(t)
	res, err := Read(writeFiles(t, map[string]string{"README.md": "# docs", "empty.yaml": "# nothing\n---\n"}), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(BeEmpty())
}

func TestRead_missingDirectory(t *testing.T) {
	g := NewWithT(t)
	_, err := Read(filepath.Join(t.TempDir(), "nope"), Options{})
	g.Expect(err).To(MatchError(And(ContainSubstring("does not exist"), ContainSubstring("spec.source.path"))))
}

func TestRead_notADirectory(t *testing.T) {
	g := NewWithT(t)
	_, err := Read("testdata/plain/00-namespace.yaml", Options{})
	g.Expect(err).To(MatchError(ContainSubstring("is not a directory")))
}

func TestRead_directoryOutsideRoot(t *testing.T) {
	g := NewWithT(t)
	_, err := Read("testdata/plain", Options{Root: "testdata/kustomize"})
	g.Expect(err).To(MatchError(ContainSubstring("is outside the artifact root")))
}

func TestRead_pathsRelativeToArtifactRoot(t *testing.T) {
	g := NewWithT(t)
	root := writeFiles(t, map[string]string{"layers/apps/bad.yaml": "kind: ["})
	_, err := Read(filepath.Join(root, "layers/apps"), Options{Root: root})
	g.Expect(err).To(MatchError(HavePrefix("layers/apps/bad.yaml:1: document 1: ")))
}

func TestRead_symlinkOutsideRoot(t *testing.T) {
	g := NewWithT(t)
	outside := writeFiles(t, map[string]string{"secret.yaml": configMap("stolen")})
	dir := writeFiles(t, map[string]string{"ok.yaml": configMap("ok")})
	g.Expect(os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "link.yaml"))).To(Succeed())
	_, err := Read(dir, Options{})
	g.Expect(err).To(MatchError(And(HavePrefix("link.yaml: "), ContainSubstring("escapes"))))
}

func TestRead_symlinkInsideRoot(t *testing.T) {
	g := NewWithT(t)
	root := writeFiles(t, map[string]string{"shared/cm.yaml": configMap("shared"), "layer/ok.yaml": configMap("ok")})
	g.Expect(os.Symlink("../shared/cm.yaml", filepath.Join(root, "layer/link.yaml"))).To(Succeed())
	res, err := Read(filepath.Join(root, "layer"), Options{Root: root})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(res.Objects)).To(Equal([]string{"ConfigMap default/shared", "ConfigMap default/ok"}))
}

func TestRead_nestedKustomizationNotBuilt(t *testing.T) {
	g := NewWithT(t)
	dir := writeFiles(t, map[string]string{"ok.yaml": configMap("ok"), "sub/kustomization.yaml": "resources: []\n"})
	_, err := Read(dir, Options{})
	g.Expect(err).To(MatchError(And(HavePrefix("sub/kustomization.yaml: "), ContainSubstring("is not built"))))
}

func TestRead_duplicateObject(t *testing.T) {
	g := NewWithT(t)
	dir := writeFiles(t, map[string]string{"a.yaml": configMap("x"), "b/c.yaml": configMap("y") + "---\n" + configMap("x")})
	_, err := Read(dir, Options{})
	g.Expect(err).To(MatchError(
		"ConfigMap default/x is defined twice: in a.yaml: document 1 and in b/c.yaml: document 2"))
}

func TestRead_labelsAndVersion(t *testing.T) {
	g := NewWithT(t)
	res, err := Read("testdata/helmreleases", Options{Layer: "apps", Version: "0.2.0"})
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range res.Objects {
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue(LayerLabel, "apps"), describe(obj))
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue(KraanLayerLabel, "apps"), describe(obj))
	}
	values := res.Objects[0].Object["spec"].(map[string]any)["values"].(map[string]any)
	g.Expect(values).To(HaveKeyWithValue(VersionValue, "0.2.0"), "podinfo is annotated kraan.updateVersion")
	for _, obj := range res.Objects[1:] {
		_, found := obj.Object["spec"].(map[string]any)["values"]
		g.Expect(found).To(BeFalse(), describe(obj))
	}
}

func TestRead_convertsFluxHelmReleases(t *testing.T) {
	g := NewWithT(t)
	res, err := Read("testdata/helmreleases", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(res.Objects)).To(Equal([]string{
		"HelmRelease apps/podinfo", "HelmRelease ingress/nginx", "HelmRelease data/redis"}))
	for _, obj := range res.Objects {
		g.Expect(obj.GetAPIVersion()).To(Equal("kraan.io/v1alpha1"))
	}
}

func TestRead_conversionErrorNamesFile(t *testing.T) {
	g := NewWithT(t)
	dir := writeFiles(t, map[string]string{"hr.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2alpha1\nkind: HelmRelease\n" +
		"metadata: {name: old, namespace: apps}\nspec: {}\n"})
	_, err := Read(dir, Options{})
	g.Expect(err).To(MatchError(
		"hr.yaml: document 1: HelmRelease apps/old: apiVersion helm.toolkit.fluxcd.io/v2alpha1 is not supported: use helm.toolkit.fluxcd.io/v2"))
}
