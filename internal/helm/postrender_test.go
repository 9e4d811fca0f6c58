package helm

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func TestOwnerRefPostRenderer_Run_OwnsOnlyWhatItCan(t *testing.T) {
	g := NewWithT(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	owner := metav1.OwnerReference{APIVersion: "test.kraan.io/v1", Kind: "Gadget", Name: "g", UID: "uid-1"}
	p := &OwnerRefPostRenderer{Owner: owner, Namespace: "ns", Mapper: mapper}
	in := bytes.NewBufferString(`---
apiVersion: v1
kind: ConfigMap
metadata: {name: implicit}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: elsewhere, namespace: other}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: explicit, namespace: ns}
`)
	out, err := p.Run(in)
	g.Expect(err).NotTo(HaveOccurred())
	owned := map[string]bool{}
	for _, doc := range bytes.Split(out.Bytes(), []byte("---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var obj struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		g.Expect(yaml.Unmarshal(doc, &obj)).To(Succeed())
		owned[obj.Metadata.Name] = len(obj.Metadata.OwnerReferences) == 1 && obj.Metadata.OwnerReferences[0].UID == "uid-1"
	}
	g.Expect(owned).To(Equal(map[string]bool{"implicit": true, "elsewhere": false, "cluster": false, "explicit": true}))
}

func TestOwnerRefPostRenderer_Run_UnknownKindFails(t *testing.T) {
	g := NewWithT(t)
	p := &OwnerRefPostRenderer{Namespace: "ns", Mapper: meta.NewDefaultRESTMapper(nil)}
	_, err := p.Run(bytes.NewBufferString("apiVersion: x.io/v1\nkind: Thing\nmetadata: {name: t}\n"))
	g.Expect(err).To(MatchError(ContainSubstring("post-rendering Thing t")))
}
