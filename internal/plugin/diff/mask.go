package diff

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Masks printed instead of Secret values. A value that differs between the
// live and the desired Secret is printed as maskBefore and maskAfter, so the
// diff shows that it changes without showing it.
const (
	mask       = "*** (masked)"
	maskBefore = "*** (masked, before)"
	maskAfter  = "*** (masked, after)"
)

// maskSecrets replaces the values of every Secret's data and stringData, in
// both the live and the desired object.
func maskSecrets(changes []Change) {
	for i := range changes {
		ch := &changes[i]
		obj := ch.Desired
		if obj == nil {
			obj = ch.Live
		}
		if gvk := obj.GroupVersionKind(); gvk.Group != "" || gvk.Kind != "Secret" {
			continue
		}
		live, desired := secretValues(ch.Live), secretValues(ch.Desired)
		maskObject(ch.Live, func(k string) string { return maskFor(k, live, desired, maskBefore) })
		maskObject(ch.Desired, func(k string) string { return maskFor(k, desired, live, maskAfter) })
	}
}

// secretValues are the Secret's values by key, stringData encoded as data is
// (so "a" in stringData equals the base64 of "a" in data).
func secretValues(obj *unstructured.Unstructured) map[string]string {
	values := map[string]string{}
	if obj == nil {
		return values
	}
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	for k, v := range data {
		values[k] = v
	}
	stringData, _, _ := unstructured.NestedStringMap(obj.Object, "stringData")
	for k, v := range stringData {
		values[k] = encode(v)
	}
	return values
}

func maskFor(key string, mine, other map[string]string, changed string) string {
	o, ok := other[key]
	if ok && o == mine[key] {
		return mask
	}
	if !ok {
		return mask // only on one side: the key itself shows the change
	}
	return changed
}

func maskObject(obj *unstructured.Unstructured, value func(key string) string) {
	if obj == nil {
		return
	}
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	stringData, _, _ := unstructured.NestedStringMap(obj.Object, "stringData")
	merged := map[string]any{}
	for k := range data {
		merged[k] = value(k)
	}
	for k := range stringData {
		merged[k] = value(k)
	}
	unstructured.RemoveNestedField(obj.Object, "stringData")
	if len(merged) > 0 {
		_ = unstructured.SetNestedMap(obj.Object, merged, "data")
	}
}

// encode is base64, as the API server stores stringData in data.
func encode(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
