package helm

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ReleaseObjects decodes manifest, the manifest of a revision of target's
// release, into its objects, with the mapper of the cluster the release
// lives in: a namespaced object without a namespace is put in the release's,
// as Helm applied it. It is what status.inventory lists.
func (e *Engine) ReleaseObjects(target Target, manifest string) ([]*unstructured.Unstructured, error) {
	return e.objectsOf(target, manifest)
}

// CRDObjects decodes the CustomResourceDefinitions of the chart's crds/
// directory, which Helm applies outside the release manifest.
func CRDObjects(c *Chart) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, crd := range c.CRDObjects() {
		decoded, err := decodeObjects(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", crd.Filename, err)
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}
