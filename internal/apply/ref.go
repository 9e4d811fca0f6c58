package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Ref identifies one object of a layer's inventory (status.resources).
type Ref struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// RefOf returns the Ref of obj.
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// RefOfResource returns the Ref of an inventory entry.
func RefOfResource(r kraanv1.Resource) Ref {
	return Ref{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// Key identifies the object independently of its API version, so that a new
// version of a kind in the source does not look like a new object.
func (r Ref) Key() string {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return gv.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Object returns an empty object carrying r's type, namespace and name, for reads.
func (r Ref) Object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(r.APIVersion)
	u.SetKind(r.Kind)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Name)
	return u
}

// String names the object in messages: "HelmRelease apps/podinfo".
func (r Ref) String() string { return Describe(r.Object()) }
