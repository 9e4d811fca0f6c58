package api_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// refusedByKraanToo are the fixtures Kraan's own CRD refused, with what our
// API server's message must name: accepting them would not be Kraan's
// behaviour either.
var refusedByKraanToo = map[string][]string{
	// No spec.version: required by Kraan's CRD as by ours.
	"config-samples-addons.yaml": {"spec.version", "Required value"},
}

// TestKraanAddonsLayers_AreAcceptedUnchanged applies every AddonsLayer of
// Kraan's repository (api/testdata/kraan, one file per Kraan file) to a real
// API server with our CRDs, unchanged, as `kubectl apply` would: each is
// accepted, and the status Kraan's controller wrote is accepted by the status
// subresource. Kraan users' Git repositories and live layers carry these
// spellings (k8sVersion "1.16" without the v, source.kind "", Kraan's
// finalizer…); refusing one would stop a migration at its first step.
func TestKraanAddonsLayers_AreAcceptedUnchanged(t *testing.T) {
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "api", "testdata", "kraan", "*.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	accepted, refused := 0, 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			docs := decodeAll(t, f)
			NewWithT(t).Expect(docs).NotTo(BeEmpty(), "no document in %s", f)
			if want, ok := refusedByKraanToo[filepath.Base(f)]; ok {
				expectRefused(t, docs, want)
				refused += len(docs)
				return
			}
			expectAccepted(t, docs)
			accepted += len(docs)
		})
	}
	// Guards against a fixture that silently decodes to nothing.
	NewWithT(t).Expect(accepted).To(Equal(25), "AddonsLayers accepted")
	NewWithT(t).Expect(refused).To(Equal(4), "AddonsLayers refused as Kraan refused them")
}

// expectAccepted creates every document, writes the status it carries, checks
// the spec was stored as written, then removes them all (the names repeat
// from one Kraan file to the next).
func expectAccepted(t *testing.T, docs []*unstructured.Unstructured) {
	ctx := context.Background()
	created := make([]*unstructured.Unstructured, 0, len(docs))
	t.Cleanup(func() { removeAll(t, created) })
	for _, doc := range docs {
		g := NewWithT(t)
		obj := doc.DeepCopy()
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed(), "AddonsLayer %s refused", doc.GetName())
		created = append(created, obj)
		g.Expect(obj.GetFinalizers()).To(Equal(doc.GetFinalizers()), "finalizers of %s", doc.GetName())
		for _, path := range [][]string{{"spec", "version"}, {"spec", "prereqs", "k8sVersion"}, {"spec", "source", "kind"}} {
			if want, ok, _ := unstructured.NestedString(doc.Object, path...); ok {
				got, _, _ := unstructured.NestedString(obj.Object, path...)
				g.Expect(got).To(Equal(want), "%v of %s was not stored as written", path, doc.GetName())
			}
		}
		status, ok := doc.Object["status"]
		if !ok {
			continue
		}
		obj.Object["status"] = status
		g.Expect(env.Client.Status().Update(ctx, obj)).To(Succeed(), "status of AddonsLayer %s refused", doc.GetName())
		// Read back as the operator reads it: a layer whose status Kraan
		// wrote waits for `kubectl kraan takeover`.
		layer := &kraanv1.AddonsLayer{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), layer)).To(Succeed())
		g.Expect(layer.AwaitsTakeOver()).To(BeTrue(), "AddonsLayer %s with Kraan's status does not await the take-over", doc.GetName())
	}
}

func expectRefused(t *testing.T, docs []*unstructured.Unstructured, want []string) {
	for _, doc := range docs {
		err := env.Client.Create(context.Background(), doc.DeepCopy(), client.DryRunAll)
		NewWithT(t).Expect(err).To(HaveOccurred(), "AddonsLayer %s accepted", doc.GetName())
		for _, w := range want {
			NewWithT(t).Expect(err.Error()).To(ContainSubstring(w))
		}
	}
}

// removeAll deletes the layers, first removing the finalizers no controller
// runs here to remove, and waits until they are gone.
func removeAll(t *testing.T, objs []*unstructured.Unstructured) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, obj := range objs {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		g.Expect(client.IgnoreNotFound(env.Client.Patch(ctx, obj, patch))).To(Succeed())
		g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj))).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy()))
		}).WithTimeout(10*time.Second).Should(BeTrue(), "AddonsLayer %s not deleted", obj.GetName())
	}
}

// decodeAll reads every YAML document of a file.
func decodeAll(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	objs, err := decodeDocuments(data)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return objs
}

// TestKraanEmptyFields_KeepTheirMeaning: what Kraan's controller writes for
// fields a user left unset is stored so that it means what Kraan meant:
// interval null gets the default, an empty source.kind and k8sVersion stay
// empty (read as GitRepository and "no minimum").
func TestKraanEmptyFields_KeepTheirMeaning(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	docs := decodeAll(t, filepath.Join(root, "api", "testdata", "kraan", "kraan-controller-update.yaml"))
	g.Expect(docs).To(HaveLen(1))
	obj := docs[0].DeepCopy()
	g.Expect(env.Client.Create(context.Background(), obj, client.DryRunAll)).To(Succeed())
	g.Expect(field(obj, "spec", "interval")).To(Equal("1m"))
	g.Expect(field(obj, "spec", "timeout")).To(Equal("1m"))
	g.Expect(field(obj, "spec", "source", "kind")).To(Equal(""))
	g.Expect(field(obj, "spec", "prereqs", "k8sVersion")).To(Equal(""))
}
