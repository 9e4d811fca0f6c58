package helm

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

const renderedApp = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.25
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {team: chart}
data: {a: b}
`

func objectsOf(g Gomega, out *bytes.Buffer) map[string]*unstructured.Unstructured {
	objs, err := decodeObjects(out.Bytes())
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	return byName
}

// TestPostRenderers_InFluxOrder: patches of both kinds and images, then
// commonMetadata over everything, overriding the chart's own label.
func TestPostRenderers_InFluxOrder(t *testing.T) {
	g := NewWithT(t)
	spec := PostRender{
		Kustomize: []*kraanv1.KustomizePostRenderer{{
			Patches: []kraanv1.KustomizePatch{
				{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n"},
				{Patch: "- op: add\n  path: /data/patched\n  value: json6902\n", Target: &kraanv1.ObjectSelector{Kind: "ConfigMap", LabelSelector: "team=chart"}},
			},
			Images: []kraanv1.KustomizeImage{{Name: "nginx", NewName: "registry.local/nginx", NewTag: "1.27"}},
		}},
		CommonMetadata: &kraanv1.CommonMetadata{Labels: map[string]string{"team": "platform"}, Annotations: map[string]string{"owner": "ops"}},
	}
	out, err := postRendererFor(spec, nil).Run(bytes.NewBufferString(renderedApp))
	g.Expect(err).NotTo(HaveOccurred())
	objs := objectsOf(g, out)
	g.Expect(objs).To(HaveLen(2))
	d := objs["Deployment/web"]
	replicas, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
	g.Expect(replicas).To(BeNumerically("==", 3))
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0].(map[string]any)["image"]).To(Equal("registry.local/nginx:1.27"))
	cm := objs["ConfigMap/settings"]
	patched, _, _ := unstructured.NestedString(cm.Object, "data", "patched")
	g.Expect(patched).To(Equal("json6902"))
	for _, o := range objs {
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("team", "platform"), o.GetName())
		g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("owner", "ops"), o.GetName())
	}
}

func TestPostRenderers_NoneIsNil(t *testing.T) {
	NewWithT(t).Expect(postRendererFor(PostRender{}, nil)).To(BeNil())
}

// TestPostRenderers_BadPatchNamesTheRenderer: errors a user can act on.
func TestPostRenderers_BadPatchNamesTheRenderer(t *testing.T) {
	for name, p := range map[string]kraanv1.KustomizePatch{
		"invalid JSON6902 path": {Patch: "- op: replace\n  path: /spec/nothing/here\n  value: 1\n", Target: &kraanv1.ObjectSelector{Kind: "Deployment"}},
		"not YAML":              {Patch: "{{{", Target: &kraanv1.ObjectSelector{Kind: "Deployment"}},
		"targets nothing":       {Patch: "apiVersion: v1\nkind: Secret\nmetadata: {name: absent}\ndata: {}\n"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec := PostRender{Kustomize: []*kraanv1.KustomizePostRenderer{
				{},
				{Patches: []kraanv1.KustomizePatch{p}},
			}}
			_, err := postRendererFor(spec, nil).Run(bytes.NewBufferString(renderedApp))
			g.Expect(err).To(MatchError(ContainSubstring("spec.postRenderers[1].kustomize: ")))
		})
	}
}
