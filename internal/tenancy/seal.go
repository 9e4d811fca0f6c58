package tenancy

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/config/crd"
)

// SealAnnotation holds the seal an AddonsLayer put on a HelmRelease it
// applies: an HMAC, under a key only the operator holds, of the layer's
// name, the HelmRelease's namespace and name, and its spec as the API server
// stores it. A tenant who edits the spec, or copies the annotation to
// another HelmRelease, breaks it.
const SealAnnotation = "kraan.io/layer-seal"

// Sealer makes and checks seals.
type Sealer struct {
	key    []byte
	schema *structuralschema.Structural
}

// NewSealer returns a sealer whose key is derived from key (the operator's
// release-record key: one secret to keep, and the derivation keeps the
// two uses apart).
func NewSealer(key []byte) (*Sealer, error) {
	schema, err := helmReleaseSchema()
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("kraan.io/layer-seal-key"))
	return &Sealer{key: mac.Sum(nil), schema: schema}, nil
}

// helmReleaseSchema is the structural schema of the HelmRelease CRD the
// operator ships: the API server fills in its defaults, so a layer seals
// the spec with them.
func helmReleaseSchema() (*structuralschema.Structural, error) {
	def := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(crd.HelmReleases, def); err != nil {
		return nil, fmt.Errorf("reading the HelmRelease CRD: %w", err)
	}
	for _, v := range def.Spec.Versions {
		if v.Name != kraanv1.GroupVersion.Version || v.Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, err
		}
		return structuralschema.NewStructural(internal)
	}
	return nil, fmt.Errorf("the HelmRelease CRD has no schema of version %s", kraanv1.GroupVersion.Version)
}

// isHelmRelease says whether obj is a kraan.io HelmRelease.
func isHelmRelease(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == kraanv1.GroupVersion.Group && gvk.Kind == "HelmRelease"
}

// Seal puts layer's seal on obj when it is a HelmRelease: the HMAC of its
// spec as the API server will store it (its defaults filled in). Other
// objects are left as they are.
func (s *Sealer) Seal(layer string, obj *unstructured.Unstructured) error {
	if !isHelmRelease(obj) {
		return nil
	}
	defaulted := obj.DeepCopy()
	structuraldefaulting.Default(defaulted.Object, s.schema)
	raw, _, err := unstructured.NestedFieldNoCopy(defaulted.Object, "spec")
	if err != nil {
		return fmt.Errorf("sealing HelmRelease %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	spec := kraanv1.HelmReleaseSpec{}
	if m, ok := raw.(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
			return fmt.Errorf("sealing HelmRelease %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	seal, err := s.seal(layer, obj.GetNamespace(), obj.GetName(), &spec)
	if err != nil {
		return err
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[SealAnnotation] = seal
	obj.SetAnnotations(annotations)
	return nil
}

// Sealed says whether hr carries the seal of layer on its current spec.
func (s *Sealer) Sealed(layer string, hr *kraanv1.HelmRelease) bool {
	got := hr.Annotations[SealAnnotation]
	if got == "" || s == nil {
		return false
	}
	want, err := s.seal(layer, hr.Namespace, hr.Name, &hr.Spec)
	return err == nil && hmac.Equal([]byte(got), []byte(want))
}

// seal is the seal of spec for HelmRelease namespace/name of layer.
func (s *Sealer) seal(layer, namespace, name string, spec *kraanv1.HelmReleaseSpec) (string, error) {
	canonical, err := canonicalSpec(spec)
	if err != nil {
		return "", fmt.Errorf("sealing HelmRelease %s/%s: %w", namespace, name, err)
	}
	mac := hmac.New(sha256.New, s.key)
	for _, field := range []string{"kraan.io/layer-seal/v1", layer, namespace, name} {
		fmt.Fprintf(mac, "%d:%s\x00", len(field), field)
	}
	mac.Write(canonical)
	return hex.EncodeToString(mac.Sum(nil)), nil
}

// canonicalSpec encodes spec so that the spec a layer sealed and the one
// the API server stored give the same bytes: through the Go type (what
// the server prunes, the operator ignores too), then through a generic
// decode (keys sorted, numbers as JSON numbers of one form).
func canonicalSpec(spec *kraanv1.HelmReleaseSpec) ([]byte, error) {
	typed, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(typed))
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic)
}
