package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// yamlBlock is a fenced YAML block of a Markdown file, with its indentation.
var yamlBlock = regexp.MustCompile("(?ms)^([ \t]*)```ya?ml\n(.*?)^[ \t]*```")

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
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		for _, m := range yamlBlock.FindAllSubmatchIndex(data, -1) {
			indent := string(data[m[2]:m[3]])
			var body strings.Builder
			for line := range strings.Lines(string(data[m[4]:m[5]])) {
				body.WriteString(strings.TrimPrefix(line, indent))
			}
			line := bytes.Count(data[:m[0]], []byte("\n")) + 1
			decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(body.String()), 4096)
			for {
				obj := &unstructured.Unstructured{}
				err := decoder.Decode(&obj.Object)
				if errors.Is(err, io.EOF) || err != nil {
					break // the end, or not a document: a fragment
				}
				group := strings.SplitN(obj.GetAPIVersion(), "/", 2)[0]
				if group != "kraan.io" && group != "habitat.kraan.io" || obj.GetKind() == "" || obj.GetName() == "" {
					continue
				}
				out = append(out, docsExample{where: filepath.Base(f) + ":" + itoa(line), obj: obj})
			}
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

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
			if ns := obj.GetNamespace(); ns != "" {
				err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				g.Expect(client.IgnoreAlreadyExists(err)).NotTo(HaveOccurred())
			}
			g.Expect(env.Client.Create(context.Background(), obj, client.DryRunAll)).To(Succeed(), ex.where)
		})
	}
	NewWithT(t).Expect(kinds).To(HaveKey("AddonsLayer"))
	NewWithT(t).Expect(kinds).To(HaveKey("HelmRelease"))
	NewWithT(t).Expect(kinds).To(HaveKey("FleetCluster"))
}
