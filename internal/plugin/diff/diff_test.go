package diff

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func secret(data map[string]any, stringData map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "namespace": "n"}}}
	if data != nil {
		u.Object["data"] = data
	}
	if stringData != nil {
		u.Object["stringData"] = stringData
	}
	return u
}

func TestMaskSecrets_SameValueMaskedChangedValueMarked(t *testing.T) {
	g := NewWithT(t)
	changes := []Change{{
		ID: "Secret n/s", Action: Update,
		// "same" is equal (stringData is compared encoded), "changed" differs.
		Live:    secret(map[string]any{"same": encode("a"), "changed": encode("old")}, nil),
		Desired: secret(map[string]any{"changed": encode("new")}, map[string]any{"same": "a", "added": "x"}),
	}}
	maskSecrets(changes)
	live, _, _ := unstructured.NestedStringMap(changes[0].Live.Object, "data")
	desired, _, _ := unstructured.NestedStringMap(changes[0].Desired.Object, "data")
	g.Expect(live).To(Equal(map[string]string{"same": mask, "changed": maskBefore}))
	g.Expect(desired).To(Equal(map[string]string{"same": mask, "changed": maskAfter, "added": mask}))
	g.Expect(changes[0].Desired.Object).NotTo(HaveKey("stringData"))
}

func TestWrite_DeletedObjectHasNoEmptyLine(t *testing.T) {
	g := NewWithT(t)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": "v"}}}
	var out bytes.Buffer
	g.Expect(Write(&out, []Change{{ID: "ConfigMap c", Action: Delete, Live: cm, Note: "gone"},
		{ID: "ConfigMap d", Action: Unchanged, Live: cm, Desired: cm}}, false)).To(Succeed())
	g.Expect(out.String()).To(Equal(`# ConfigMap c deleted (gone)
--- live/ConfigMap c
+++ /dev/null
@@ -1,6 +0,0 @@
-apiVersion: v1
-data:
-  k: v
-kind: ConfigMap
-metadata:
-  name: c
`))
}

func TestClean_DropsWhatTheServerManages(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "resourceVersion": "1", "uid": "u", "managedFields": []any{},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		"status": map[string]any{"x": "y"}}}
	g.Expect(clean(u).Object).To(Equal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"}}))
}
