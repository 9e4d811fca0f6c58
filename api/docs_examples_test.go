package api_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kraan-io/kraan-operator/test/guide"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// docsExample is one object of the operator's kinds shown in docs/.
type docsExample struct {
	where string
	obj   *unstructured.Unstructured
}

// docsExamples decodes the YAML blocks of docs/*.md and keeps the complete
// objects of the operator's API groups: a reader copies them as they are.
// Fragments (a spec without apiVersion, or a block that is not YAML at all)
// are not objects and are left out.
func docsExamples(t *testing.T) []docsExample {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	g.Expect(err).NotTo(HaveOccurred())
	var out []docsExample
	for _, f := range files {
		blocks, err := guide.ReadBlocks(f, "yaml", "yml")
		g.Expect(err).NotTo(HaveOccurred())
		for _, b := range blocks {
			objs, _ := decodeDocuments([]byte(b.Text)) // past an error: a fragment
			for _, obj := range objs {
				group, _, _ := strings.Cut(obj.GetAPIVersion(), "/")
				if group != "kraan.io" && group != "habitat.kraan.io" || obj.GetKind() == "" || obj.GetName() == "" {
					continue
				}
				out = append(out, docsExample{where: filepath.Base(f) + ":" + strconv.Itoa(b.Line), obj: obj})
			}
		}
	}
	return out
}

// TestDocsExamples_AreAccepted: every object of the operator's kinds the docs
// show is one the API server accepts, so a guide cannot drift from the CRDs.
func TestDocsExamples_AreAccepted(t *testing.T) {
	examples := docsExamples(t)
	kinds := map[string]bool{}
	for _, ex := range examples {
		kinds[ex.obj.GetKind()] = true
		t.Run(ex.where+"/"+ex.obj.GetKind()+"/"+ex.obj.GetName(), func(t *testing.T) {
			g := NewWithT(t)
			obj := ex.obj.DeepCopy()
			namespaced, err := env.Client.IsObjectNamespaced(obj)
			g.Expect(err).NotTo(HaveOccurred())
			if namespaced && obj.GetNamespace() == "" {
				obj.SetNamespace("default") // where `kubectl apply` puts it
			}
			expectDryRunAccepted(g, obj)
		})
	}
	NewWithT(t).Expect(kinds).To(HaveKey("AddonsLayer"))
	NewWithT(t).Expect(kinds).To(HaveKey("HelmRelease"))
	NewWithT(t).Expect(kinds).To(HaveKey("FleetCluster"))
}
