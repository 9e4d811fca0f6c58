package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// The media types `flux push artifact` uses for its config and its layer.
const (
	fluxConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
	fluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// TestLayers_Artifacts drives hostile artifacts through the real
// source-controller: one tampered with in its storage, and tarballs with
// escaping paths and links. source-controller builds Git artifacts itself
// (regular files and directories only), so hostile tarballs come from an
// OCIRepository with layerSelector.operation copy, which stores the layer
// pulled from an in-process OCI registry byte for byte as the artifact.
func TestLayers_Artifacts(t *testing.T) {
	began := time.Now()
	h := startHarness(t)
	reg := startOCIRegistry(t)
	t.Logf("harness up in %v", time.Since(began).Round(time.Millisecond))
	for _, tc := range []struct {
		name string
		run  func(*harness)
	}{
		{"a tampered artifact fails naming the digest and keeps what was deployed", testTamperedArtifact},
		{"a tarball with dot-dot paths fails naming the entry and writes nothing outside", func(h *harness) { testEscapingPaths(h, reg) }},
		{"links in a tarball are not followed and write nothing outside", func(h *harness) { testOutsideLinks(h, reg) }},
		{"a file over the operator's per-file cap fails naming the flag", func(h *harness) { testFileOverTheCap(h, reg) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			tc.run(h.forTest(t))
			t.Logf("took %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

func testTamperedArtifact(h *harness) {
	g := NewWithT(h.t)
	h.createGitSource("guarded", "guarded")
	rev1 := h.commitTo("guarded", "guarded", map[string]string{
		"addons/guarded/all.yaml": namespace("guarded") + deployment("guarded", "web") + configMapYAML("guarded", "settings", "v1"),
	})
	h.addLayer("guarded", "guarded")
	h.waitLayer("guarded", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(l.Status.Revision).To(Equal(rev1))
	})
	uid := h.webUID(g, "guarded")

	// The next revision comes from a release branch with a source of its own,
	// so the operator has not downloaded it when its file in
	// source-controller's storage is replaced: by a well-formed tarball with an
	// object of the attacker's, whose digest differs from status.artifact.digest.
	h.createGitSource("guarded-next", "guarded-next")
	h.commitTo("guarded-next", "guarded-next", map[string]string{
		"addons/guarded/all.yaml": namespace("guarded") + deployment("guarded", "web") +
			configMapYAML("guarded", "settings", "v2") + configMapYAML("guarded", "next", "v2"),
	})
	art := h.artifactOf(g, &sourcev1.GitRepository{}, "guarded-next")
	tampered := tarGz(h.t, regular("addons/guarded/all.yaml", configMapYAML("guarded", "evil", "tampered")))
	tamperedDigest := digestOf(tampered)
	g.Expect(tamperedDigest).NotTo(Equal(art.Digest))
	g.Expect(os.WriteFile(filepath.Join(h.storage, art.Path), tampered, 0o600)).To(Succeed())

	h.updateLayer("guarded", func(l *kraanv1.AddonsLayer) { l.Spec.Source.Name = "guarded-next" })
	h.logReady(h.waitLayer("guarded", kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		for _, t := range []string{kraanv1.ReadyCondition, kraanv1.SourceReadyCondition} {
			c := cond(l, t)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), t)
			g.Expect(c.Reason).To(Equal("ArtifactFailed"), t)
			g.Expect(c.Message).To(And(ContainSubstring("digest mismatch"), ContainSubstring("expected "+art.Digest),
				ContainSubstring("got "+tamperedDigest), ContainSubstring(art.Revision)), t)
		}
		g.Expect(l.Status.Revision).To(Equal(rev1), "the last Deployed revision")
		// A mismatch may be a file being replaced: not Stalled, retried.
		expectConditions(g, l, map[string]metav1.ConditionStatus{
			kraanv1.StalledCondition: absent, kraanv1.ReconcilingCondition: metav1.ConditionTrue,
		})
	}))
	h.expectEvent("guarded", corev1.EventTypeWarning, "ArtifactFailed", "digest mismatch")
	// Retries (every interval, 5s) download the same bytes and keep failing;
	// nothing of either revision is applied or removed meanwhile.
	g.Consistently(func(g Gomega) {
		g.Expect(h.layer(g, "guarded").Status.State).To(Equal(kraanv1.FailedState))
		g.Expect(h.webUID(g, "guarded")).To(Equal(uid))
		g.Expect(h.configMapValue("guarded", "settings")).To(Equal("v1"))
		g.Expect(h.notFound(&corev1.ConfigMap{}, "guarded", "evil")).To(BeTrue(), "tampered content was applied")
		g.Expect(h.notFound(&corev1.ConfigMap{}, "guarded", "next")).To(BeTrue())
	}).WithTimeout(7 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	// Recovery: a new commit makes source-controller publish a fresh artifact
	// (it also re-checks the stored one's digest and drops the tampered file).
	rev3 := h.commitTo("guarded-next", "guarded-next", map[string]string{
		"addons/guarded/all.yaml": namespace("guarded") + deployment("guarded", "web") +
			configMapYAML("guarded", "settings", "v3") + configMapYAML("guarded", "next", "v3"),
	})
	h.waitLayer("guarded", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(l.Status.Revision).To(Equal(rev3))
		expectConditions(g, l, map[string]metav1.ConditionStatus{
			kraanv1.ReadyCondition: metav1.ConditionTrue, kraanv1.SourceReadyCondition: metav1.ConditionTrue,
		})
	})
	g.Expect(h.configMapValue("guarded", "settings")).To(Equal("v3"))
	g.Expect(h.configMapValue("guarded", "next")).To(Equal("v3"))
	g.Expect(h.notFound(&corev1.ConfigMap{}, "guarded", "evil")).To(BeTrue())
	g.Expect(h.webUID(g, "guarded")).To(Equal(uid), "recovery recreated the Deployment")
}

func testEscapingPaths(h *harness, reg string) {
	g := NewWithT(h.t)
	// Extracted naively, "../../<marker>" lands in the harness directory (the
	// parent of the store), from the store's temporary extraction directory.
	const marker = "kraan-e2e-escaped.yaml"
	hostile := tarGz(h.t,
		regular("addons/escape/all.yaml", configMapYAML("default", "escape-first", "v1")),
		regular("../../"+marker, configMapYAML("default", "escaped", "v1")),
	)
	h.pushAndCreateOCISource(reg, "escape", hostile)
	art := h.artifactOf(g, &sourcev1.OCIRepository{}, "escape")
	g.Expect(art.Digest).To(Equal(digestOf(hostile)), "source-controller must store the layer as is")

	h.addLayer("escape", "escape", withOCISource("escape"))
	h.logReady(h.waitLayer("escape", kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		for _, t := range []string{kraanv1.ReadyCondition, kraanv1.SourceReadyCondition} {
			c := cond(l, t)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), t)
			g.Expect(c.Reason).To(Equal("ArtifactFailed"), t)
			g.Expect(c.Message).To(And(ContainSubstring(`unsafe archive entry "../../`+marker+`"`),
				ContainSubstring("escapes the target directory"), ContainSubstring(art.Revision)), t)
		}
		// Fetching the same artifact again cannot help: Stalled, not retrying.
		expectConditions(g, l, map[string]metav1.ConditionStatus{
			kraanv1.StalledCondition: metav1.ConditionTrue, kraanv1.ReconcilingCondition: absent,
		})
		g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
	}))
	h.expectEvent("escape", corev1.EventTypeWarning, "ArtifactFailed", "../../"+marker)
	g.Expect(h.notFound(&corev1.ConfigMap{}, "default", "escape-first")).To(BeTrue(), "part of a rejected archive was applied")
	g.Expect(h.notFound(&corev1.ConfigMap{}, "default", "escaped")).To(BeTrue())
	g.Expect(findFiles(h.dir, marker)).To(BeEmpty(), "an archive entry was written outside the store")
	g.Expect(filepath.Join(os.TempDir(), marker)).NotTo(BeAnExistingFile())
	g.Expect(findFiles(h.data, strings.Replace(art.Digest, ":", "-", 1)+"*")).To(BeEmpty(),
		"a rejected archive was kept in the store")

	// Recovery: a clean artifact under the same tag.
	h.pushAndCreateOCISource(reg, "escape", tarGz(h.t, regular("addons/escape/all.yaml", configMapYAML("default", "escape-first", "v2"))))
	h.waitLayer("escape", kraanv1.DeployedState, nil)
	g.Expect(h.configMapValue("default", "escape-first")).To(Equal("v2"))
}

// testFileOverTheCap: the operator's --max-artifact-file-size reaches the
// layers' artifact store (the harness starts it with artifactFileCap). A
// tenant's source cannot make it hold a file larger than that.
func testFileOverTheCap(h *harness, reg string) {
	g := NewWithT(h.t)
	bulky := tarGz(h.t,
		regular("addons/bulky/all.yaml", configMapYAML("default", "bulky-first", "v1")),
		regular("addons/bulky/blob.txt", strings.Repeat("x", artifactFileCap+1)),
	)
	h.pushAndCreateOCISource(reg, "bulky", bulky)
	h.addLayer("bulky", "bulky", withOCISource("bulky"))
	h.logReady(h.waitLayer("bulky", kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		c := cond(l, kraanv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal("ArtifactFailed"))
		g.Expect(c.Message).To(And(ContainSubstring(`"addons/bulky/blob.txt"`), ContainSubstring("--max-artifact-file-size")))
	}))
	g.Expect(h.notFound(&corev1.ConfigMap{}, "default", "bulky-first")).To(BeTrue(), "part of a refused archive was applied")
}

func testOutsideLinks(h *harness, reg string) {
	g := NewWithT(h.t)
	// A directory outside the harness and the store, holding an object a link
	// could smuggle into the layer.
	outside := h.t.TempDir()
	leak := filepath.Join(outside, "leak.yaml")
	g.Expect(os.WriteFile(leak, []byte(configMapYAML("default", "leaked", "secret")), 0o600)).To(Succeed())
	hostile := tarGz(h.t,
		regular("addons/links/all.yaml", configMapYAML("default", "links-kept", "v1")),
		symlink("addons/links/leak.yaml", leak),
		symlink("addons/links/relative.yaml", strings.Repeat("../", 20)+strings.TrimPrefix(leak, "/")),
		// A directory link, then a file written "through" it.
		symlink("addons/links/escape", outside),
		regular("addons/links/escape/written.yaml", configMapYAML("default", "through-link", "v1")),
		// A layer path that is itself a link out of the artifact.
		symlink("addons/outside", outside),
	)
	h.pushAndCreateOCISource(reg, "links", hostile)
	art := h.artifactOf(g, &sourcev1.OCIRepository{}, "links")
	g.Expect(art.Digest).To(Equal(digestOf(hostile)), "source-controller must store the layer as is")

	// Links are skipped, as source-controller skips them when it builds
	// artifacts: the layer deploys its regular files only.
	h.addLayer("links", "links", withOCISource("links"))
	h.waitLayer("links", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		// ... and says so, naming them.
		g.Expect(cond(l, kraanv1.ReadyCondition).Message).To(ContainSubstring(
			"warning: 3 symbolic links in the layer's directory were skipped, not followed: " +
				"addons/links/leak.yaml, addons/links/relative.yaml, addons/links/escape"))
	})
	g.Expect(h.configMapValue("default", "links-kept")).To(Equal("v1"))
	g.Expect(h.notFound(&corev1.ConfigMap{}, "default", "leaked")).To(BeTrue(), "a link smuggled a file from outside into the layer")
	// The file under the skipped directory link was written inside the
	// artifact, as a plain directory, not through the link.
	g.Expect(h.configMapValue("default", "through-link")).To(Equal("v1"))
	entries, err := os.ReadDir(outside)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1), "something was written through a link to %s", outside)

	// A layer whose path is a link out finds nothing there.
	h.addLayer("links-out", "links", withOCISource("links"), withPath("./addons/outside"))
	h.logReady(h.waitLayer("links-out", kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(cond(l, kraanv1.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
		c := cond(l, kraanv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal("PathNotFound"))
		g.Expect(c.Message).To(ContainSubstring("path ./addons/outside not found in revision " + art.Revision))
		g.Expect(c.Message).To(ContainSubstring("it is a symbolic link in the artifact, and links are skipped"))
	}))
	g.Expect(h.notFound(&corev1.ConfigMap{}, "default", "leaked")).To(BeTrue())
}

// artifactOf waits until the Flux source in flux-system (read into obj) is
// Ready with an artifact for its generation, and returns the artifact.
func (h *harness) artifactOf(g Gomega, obj client.Object, name string) *fluxmeta.Artifact {
	var art *fluxmeta.Artifact
	g.Eventually(func(g Gomega) { art = h.readyArtifact(g, obj, name) }).
		WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	return art
}

// readyArtifact is one look at what artifactOf waits for.
func (h *harness) readyArtifact(g Gomega, obj client.Object, name string) *fluxmeta.Artifact {
	g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: fluxNamespace, Name: name}, obj)).To(Succeed())
	var art *fluxmeta.Artifact
	var conds []metav1.Condition
	switch s := obj.(type) {
	case *sourcev1.GitRepository:
		art, conds = s.Status.Artifact, s.Status.Conditions
	case *sourcev1.OCIRepository:
		art, conds = s.Status.Artifact, s.Status.Conditions
	case *sourcev1.HelmChart:
		art, conds = s.Status.Artifact, s.Status.Conditions
	case *sourcev1.HelmRepository:
		art, conds = s.Status.Artifact, s.Status.Conditions
	}
	g.Expect(art).NotTo(BeNil(), "source %s has no artifact: %+v", name, conds)
	g.Expect(conds).To(ContainElement(And(HaveField("Type", "Ready"), HaveField("Status", metav1.ConditionTrue),
		HaveField("ObservedGeneration", obj.GetGeneration()))), "source %s is not Ready", name)
	return art
}

// startOCIRegistry serves an in-memory OCI registry (go-containerregistry's)
// on 127.0.0.1 and returns its host:port.
func startOCIRegistry(t *testing.T) string {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// pushAndCreateOCISource pushes tgz as the single layer of <reg>/layers/<name>:v1,
// as `flux push artifact` would, and creates the OCIRepository name copying
// that layer, or asks it to fetch again if it exists; it waits for the
// artifact of the pushed manifest.
func (h *harness) pushAndCreateOCISource(reg, source string, tgz []byte) {
	g := NewWithT(h.t)
	ctx := h.t.Context()
	store := memory.New()
	config, err := oras.PushBytes(ctx, store, fluxConfigMediaType, []byte("{}"))
	g.Expect(err).NotTo(HaveOccurred())
	layer, err := oras.PushBytes(ctx, store, fluxContentMediaType, tgz)
	g.Expect(err).NotTo(HaveOccurred())
	opts := oras.PackManifestOptions{ConfigDescriptor: &config}
	opts.Layers = append(opts.Layers, layer)
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "", opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(store.Tag(ctx, manifest, "v1")).To(Succeed())
	target, err := remote.NewRepository(reg + "/layers/" + source)
	g.Expect(err).NotTo(HaveOccurred())
	target.PlainHTTP = true
	_, err = oras.Copy(ctx, store, "v1", target, "v1", oras.DefaultCopyOptions)
	g.Expect(err).NotTo(HaveOccurred())

	repo := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: source},
		Spec: sourcev1.OCIRepositorySpec{
			URL: "oci://" + reg + "/layers/" + source, Reference: &sourcev1.OCIRepositoryRef{Tag: "v1"},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: fluxContentMediaType, Operation: sourcev1.OCILayerCopy},
			Insecure:      true, Interval: metav1.Duration{Duration: time.Hour},
		},
	}
	if h.notFound(&sourcev1.OCIRepository{}, fluxNamespace, source) {
		g.Expect(h.c.Create(h.t.Context(), repo)).To(Succeed())
	} else {
		h.requestReconcile(&sourcev1.OCIRepository{}, source)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(h.readyArtifact(g, &sourcev1.OCIRepository{}, source).Revision).To(Equal("v1@" + manifest.Digest.String()))
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// tarEntry is a regular file, or a symbolic link when link is set.
type tarEntry struct{ name, body, link string }

func regular(name, body string) tarEntry { return tarEntry{name: name, body: body} }
func symlink(name, target string) tarEntry {
	return tarEntry{name: name, link: target}
}

// tarGz writes the entries as given: archive/tar does not clean names, which
// is what lets a test build a hostile archive.
func tarGz(t testing.TB, entries ...tarEntry) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		if e.link != "" {
			hdr = &tar.Header{Name: e.name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: e.link}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %s: %v", e.name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("tar body %s: %v", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// findFiles returns the paths below root whose base name matches pattern.
// Unreadable directories (the plane's, owned by its processes) are skipped.
func findFiles(root, pattern string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if ok, _ := filepath.Match(pattern, d.Name()); ok {
			found = append(found, p)
		}
		return nil
	})
	return found, err
}
