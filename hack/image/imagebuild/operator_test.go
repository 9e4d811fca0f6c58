package imagebuild_test

import (
	"archive/tar"
	"crypto/x509"
	"debug/buildinfo"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
)

// modulePath is the operator's Go module.
const modulePath = "github.com/kraan-io/kraan-operator"

// TestOperatorImage_NonRootStaticBinaryOfThisCommit pulls the operator image
// from the registry and checks what a restricted Pod needs and what the
// issue promises: user 65532:65532, the entrypoint, the OCI labels, no shell
// in any layer, CA certificates, a sticky /tmp, and a binary that is this
// module built from this commit (its embedded build information), static.
func TestOperatorImage_NonRootStaticBinaryOfThisCommit(t *testing.T) {
	g := NewWithT(t)
	b := images(t)
	opRef, _, _ := pushAll(t, b)
	head := gitHead(t)

	d, err := name.NewDigest(opRef)
	g.Expect(err).NotTo(HaveOccurred())
	idx, err := remote.Index(d, tlsTransport())
	g.Expect(err).NotTo(HaveOccurred())
	im, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(im.Manifests).To(HaveLen(len(testPlatforms)))
	g.Expect(im.Manifests[0].Platform).To(Equal(&v1.Platform{OS: "linux", Architecture: "amd64"}))
	img, err := idx.Image(im.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())

	cf, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cf.Config.User).To(Equal("65532:65532"))
	g.Expect(cf.Config.Entrypoint).To(Equal([]string{"/manager"}))
	g.Expect(cf.Config.Cmd).To(BeEmpty())
	g.Expect(cf.Config.Labels).To(HaveKeyWithValue(imagebuild.LabelSource, "https://github.com/kraan-io/kraan-operator"))
	g.Expect(cf.Config.Labels).To(HaveKeyWithValue(imagebuild.LabelVersion, "0.1.0"))
	g.Expect(cf.Config.Labels).To(HaveKeyWithValue(imagebuild.LabelRevision, head))
	g.Expect(cf.OS + "/" + cf.Architecture).To(Equal("linux/amd64"))

	files := imageFiles(t, img)
	for name := range files {
		base := path.Base(name)
		g.Expect(base).NotTo(BeElementOf("sh", "bash", "ash", "dash", "busybox", "apt", "apt-get", "dpkg", "apk"),
			"the image has no shell or package manager: %s", name)
		g.Expect(name).NotTo(Or(HavePrefix("bin/"), HavePrefix("usr/"), HavePrefix("sbin/")), "nothing but the operator is executable: %s", name)
	}
	g.Expect(files).To(HaveKey("manager"))
	g.Expect(files).To(HaveKey("watches.yaml"))
	g.Expect(files).To(HaveKey("helm-charts/habitat/Chart.yaml"))
	g.Expect(string(files["etc/passwd"].data)).To(ContainSubstring("nonroot:x:65532:65532:"))
	g.Expect(files["tmp"].hdr.Mode).To(Equal(int64(0o1777)))
	g.Expect(files["manager"].hdr.Mode).To(Equal(int64(0o755)))

	// The CA bundle is Mozilla's root store, every block a certificate.
	certs := 0
	for rest := files[imagebuild.CACertificatesPath].data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		_, err := x509.ParseCertificate(block.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		certs++
	}
	g.Expect(certs).To(BeNumerically(">", 100))

	// The binary: this module, this commit, static, reproducible flags.
	bin := filepath.Join(t.TempDir(), "manager")
	g.Expect(os.WriteFile(bin, files["manager"].data, 0o755)).To(Succeed())
	info, err := buildinfo.ReadFile(bin)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Path).To(Equal(modulePath + "/cmd"))
	g.Expect(info.Main.Path).To(Equal(modulePath))
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	g.Expect(settings).To(HaveKeyWithValue("vcs.revision", head))
	g.Expect(settings).To(HaveKeyWithValue("CGO_ENABLED", "0"))
	g.Expect(settings).To(HaveKeyWithValue("-trimpath", "true"))
	g.Expect(settings).To(HaveKeyWithValue("GOARCH", "amd64"))
	g.Expect(settings).To(HaveKeyWithValue("vcs.modified", "false"), "built from a clean checkout of the commit")
}

type imageFile struct {
	hdr  *tar.Header
	data []byte
}

// imageFiles reads every layer of img, later layers overriding earlier ones.
func imageFiles(t *testing.T, img v1.Image) map[string]imageFile {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]imageFile{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimSuffix(hdr.Name, "/")] = imageFile{hdr: hdr, data: data}
		}
		_ = rc.Close()
	}
	return files
}

func gitHead(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "git", "-C", moduleRoot(t), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestBuild_SameCommitSameDigests builds the three images a second time and
// gets the same digests: nothing of the clock, the build directory or the
// checkout's file modes gets into them.
func TestBuild_SameCommitSameDigests(t *testing.T) {
	g := NewWithT(t)
	first := images(t)
	second := build(t, t.TempDir())
	g.Expect(second.operator.Digest).To(Equal(first.operator.Digest), "operator image index")
	g.Expect(second.bundle.Digest).To(Equal(first.bundle.Digest), "bundle image")
	g.Expect(second.catalog.Digest).To(Equal(first.catalog.Digest), "catalog image")
	for i := range first.operator.SBOMs {
		a, err := os.ReadFile(first.operator.SBOMs[i])
		g.Expect(err).NotTo(HaveOccurred())
		b, err := os.ReadFile(second.operator.SBOMs[i])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(b).To(Equal(a), "SBOM")
	}
}

// TestSBOM_ListsTheModulesOfGoMod reads the SPDX document written beside the
// operator's layout: it describes the operator module and lists the Helm SDK
// and controller-runtime at the versions go.mod requires.
func TestSBOM_ListsTheModulesOfGoMod(t *testing.T) {
	g := NewWithT(t)
	b := images(t)
	g.Expect(b.operator.SBOMs).To(ConsistOf(filepath.Join(b.dir, "operator.linux-amd64.spdx.json")))
	data, err := os.ReadFile(b.operator.SBOMs[0])
	g.Expect(err).NotTo(HaveOccurred())
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			SPDXID       string `json:"SPDXID"`
			Name         string `json:"name"`
			VersionInfo  string `json:"versionInfo"`
			ExternalRefs []struct {
				ReferenceLocator string `json:"referenceLocator"`
			} `json:"externalRefs"`
		} `json:"packages"`
		Relationships []struct {
			From string `json:"spdxElementId"`
			Type string `json:"relationshipType"`
			To   string `json:"relatedSpdxElement"`
		} `json:"relationships"`
	}
	g.Expect(json.Unmarshal(data, &doc)).To(Succeed())
	g.Expect(doc.SPDXVersion).To(Equal("SPDX-2.3"))
	versions, ids := map[string]string{}, map[string]string{}
	for _, p := range doc.Packages {
		versions[p.Name], ids[p.Name] = p.VersionInfo, p.SPDXID
		g.Expect(p.ExternalRefs).To(HaveLen(1))
		g.Expect(p.ExternalRefs[0].ReferenceLocator).To(Equal("pkg:golang/" + p.Name + "@" + p.VersionInfo))
	}
	required := goModRequires(t)
	for _, mod := range []string{"helm.sh/helm/v4", "sigs.k8s.io/controller-runtime"} {
		g.Expect(required[mod]).NotTo(BeEmpty(), "go.mod requires %s", mod)
		g.Expect(versions).To(HaveKeyWithValue(mod, required[mod]))
	}
	type rel struct{ From, Type, To string }
	rels := make([]rel, 0, len(doc.Relationships))
	for _, r := range doc.Relationships {
		rels = append(rels, rel{r.From, r.Type, r.To})
	}
	g.Expect(ids).To(HaveKey(modulePath))
	g.Expect(rels).To(ContainElement(rel{"SPDXRef-DOCUMENT", "DESCRIBES", ids[modulePath]}))
	g.Expect(rels).To(ContainElement(rel{ids[modulePath], "DEPENDS_ON", ids["helm.sh/helm/v4"]}))
}

// goModRequires reads go.mod's require directives.
func goModRequires(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "edit", "-json")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	req := map[string]string{}
	for _, r := range mod.Require {
		req[r.Path] = r.Version
	}
	return req
}
