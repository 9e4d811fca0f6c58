package helm

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OwnerRefPostRenderer gives every rendered object that can have one a
// controller owner reference to Owner, so deleting the owner collects the
// release's objects and their changes can be mapped back to it. Objects that
// cannot be owned — cluster-scoped, or in another namespace than the owner —
// are left as rendered; the finalizer's uninstall removes them.
type OwnerRefPostRenderer struct {
	// Owner is the custom resource the release belongs to.
	Owner metav1.OwnerReference
	// Namespace of the owner.
	Namespace string
	// Mapper tells namespaced kinds from cluster-scoped ones.
	Mapper meta.RESTMapper
}

// Run adds the owner reference to the manifests Helm rendered.
func (p *OwnerRefPostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	return eachObject(rendered, func(obj *unstructured.Unstructured) error {
		owned, err := p.canOwn(obj)
		if owned {
			obj.SetOwnerReferences(append(obj.GetOwnerReferences(), p.Owner))
		}
		return err
	})
}

// canOwn reports whether obj lives in the owner's namespace. An object
// without a namespace goes to the release namespace, the owner's, when its
// kind is namespaced.
func (p *OwnerRefPostRenderer) canOwn(obj *unstructured.Unstructured) (bool, error) {
	if obj.GetNamespace() != "" {
		return obj.GetNamespace() == p.Namespace, nil
	}
	gvk := obj.GroupVersionKind()
	mapping, err := p.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("post-rendering %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// sortedKeys orders SplitManifests' keys (manifest-0, manifest-1, …) by
// their position in the rendered stream, keeping Helm's install order stable.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for i := range len(m) {
		keys = append(keys, fmt.Sprintf("manifest-%d", i))
	}
	return keys
}
