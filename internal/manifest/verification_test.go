package manifest

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func namedObject(kind, name string, annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind(kind)
	obj.SetName(name)
	obj.SetAnnotations(annotations)
	return obj
}

func TestSplitLayerTests(t *testing.T) {
	g := NewWithT(t)
	objs := []*unstructured.Unstructured{
		namedObject("ConfigMap", "a", nil),
		namedObject("Pod", "smoke", map[string]string{LayerTestAnnotation: "true"}),
		namedObject("ConfigMap", "b", map[string]string{LayerTestAnnotation: "false"}),
		namedObject("Pod", "e2e", map[string]string{LayerTestAnnotation: "true"}),
	}
	objects, tests := SplitLayerTests(objs)
	names := func(in []*unstructured.Unstructured) []string {
		out := make([]string, 0, len(in))
		for _, o := range in {
			out = append(out, o.GetName())
		}
		return out
	}
	g.Expect(names(objects)).To(Equal([]string{"a", "b"}))
	g.Expect(names(tests)).To(Equal([]string{"smoke", "e2e"}))
}

func TestStampLayerTestRun(t *testing.T) {
	g := NewWithT(t)
	obj := namedObject("Pod", "smoke", nil)
	StampLayerTestRun(obj, LayerTestRun("1.2.0", "main@sha1:abc"))
	g.Expect(obj.GetAnnotations()).To(HaveKeyWithValue(LayerTestRunAnnotation, "1.2.0@main@sha1:abc"))
	obj.SetAnnotations(map[string]string{LayerTestAnnotation: "true"})
	StampLayerTestRun(obj, "v2@r2")
	g.Expect(obj.GetAnnotations()).To(Equal(map[string]string{LayerTestAnnotation: "true", LayerTestRunAnnotation: "v2@r2"}))
}
