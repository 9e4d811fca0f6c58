package olm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// catalogDoc is one document of a file-based catalog.
type catalogDoc = map[string]any

// committedCatalog reads catalog/ as `make catalog` wrote it, with every
// olm.bundle's image emptied: OLM unpacks a bundle that names an image with
// a Job, which kwok's pods never run, while a bundle without one is served
// with its objects embedded (olm.bundle.object), which is all OLM needs. The
// channels, entries and bundle objects are the committed ones.
func committedCatalog(t *testing.T) []catalogDoc {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "catalog", pkgName, "index.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	parts := strings.Split(strings.TrimPrefix(string(data), "---\n"), "\n---\n")
	docs := make([]catalogDoc, 0, len(parts))
	for _, part := range parts {
		doc := catalogDoc{}
		g.Expect(yaml.Unmarshal([]byte(part), &doc)).To(Succeed())
		if doc["schema"] == "olm.bundle" {
			doc["image"] = ""
		}
		docs = append(docs, doc)
	}
	return docs
}

// releasedCatalog is the catalog as it was when only bundle released was
// published: the package defaulting to its channel, that bundle alone, and
// that channel holding only it.
func releasedCatalog(t *testing.T, docs []catalogDoc, released, channel string) []catalogDoc {
	t.Helper()
	out := make([]catalogDoc, 0, len(docs))
	for _, doc := range docs {
		switch doc["schema"] {
		case "olm.package":
			doc = copyDoc(t, doc)
			doc["defaultChannel"] = channel
		case "olm.bundle":
			if doc["name"] != released {
				continue
			}
		case "olm.channel":
			if doc["name"] != channel {
				continue
			}
			doc = copyDoc(t, doc)
			doc["entries"] = []any{map[string]any{"name": released}}
		case "olm.deprecations":
			continue
		}
		out = append(out, doc)
	}
	return out
}

func copyDoc(t *testing.T, doc catalogDoc) catalogDoc {
	t.Helper()
	data, err := yaml.Marshal(doc)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	out := catalogDoc{}
	NewWithT(t).Expect(yaml.Unmarshal(data, &out)).To(Succeed())
	return out
}

// serveCatalogDocs writes docs as a file-based catalog, validates it with
// opm and serves it with opm on a free port, until the test ends.
func serveCatalogDocs(t *testing.T, work, opm, name string, docs []catalogDoc) int {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(work, "catalog-"+name, pkgName)
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	var b strings.Builder
	for _, doc := range docs {
		data, err := yaml.Marshal(doc)
		g.Expect(err).NotTo(HaveOccurred())
		b.WriteString("---\n")
		b.Write(data)
	}
	g.Expect(os.WriteFile(filepath.Join(dir, "index.yaml"), []byte(b.String()), 0o600)).To(Succeed())
	run(t, opm, "validate", filepath.Dir(dir))
	port := freePort(t)
	startProcess(t, work, "opm-"+name, nil, opm, "serve", filepath.Dir(dir),
		"--port", strconv.Itoa(port), "--pprof-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--termination-log", filepath.Join(work, "opm-"+name+".termination"))
	return port
}
