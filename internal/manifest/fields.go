package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
)

// fieldTree is the set of JSON field paths a Go API type has. It is derived by
// reflection from kraanv1.HelmReleaseSpec, so a field added to our API is
// carried over from Flux HelmReleases without touching this package.
type fieldTree struct {
	// children by JSON name; nil for a leaf, whose whole value is kept.
	children map[string]*fieldTree
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// newFieldTree describes t. Types with their own JSON encoding (metav1.Duration,
// apiextensionsv1.JSON values) and non-struct types are leaves; pointers and
// slices describe their elements.
func newFieldTree(t reflect.Type) *fieldTree {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return &fieldTree{}
	}
	tree := &fieldTree{children: map[string]*fieldTree{}}
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := jsonName(f); ok {
			tree.children[name] = newFieldTree(f.Type)
		}
	}
	return tree
}

// jsonName is a struct field's JSON name; false for fields that are not
// encoded, or whose fields are encoded inline (VisibleFields lists those).
func jsonName(f reflect.StructField) (string, bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case name == "-" || !f.IsExported():
		return "", false
	case f.Anonymous && (name == "" || strings.Contains(opts, "inline")):
		return "", false
	case name == "":
		return f.Name, true
	}
	return name, true
}

// prune returns a copy of v without the fields the tree does not have, and
// appends the path of each dropped field to dropped. Keys are visited in
// sorted order so warnings come out in a stable order. A value of the wrong
// shape is kept as is: validateSpec reports it.
func (t *fieldTree) prune(v any, path string, dropped *[]string) any {
	if t.children == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sets.List(sets.KeySet(x)) {
			child, ok := t.children[k]
			if !ok {
				*dropped = append(*dropped, path+"."+k)
				continue
			}
			out[k] = child.prune(x[k], path+"."+k, dropped)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = t.prune(x[i], fmt.Sprintf("%s[%d]", path, i), dropped)
		}
		return out
	default:
		return v
	}
}

// decodeStrict decodes an unstructured map into out, failing on an unknown
// field or a value of the wrong type ("cannot unmarshal string into Go struct
// field HelmReleaseSpec.maxHistory of type int").
func decodeStrict(in map[string]any, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}
