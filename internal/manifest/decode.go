package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// document is one YAML document of a file and the line it starts on.
type document struct {
	first int // 1-based line of the document's first line in the file
	data  []byte
}

// splitDocuments splits a file on `---` separator lines, the way kubectl does:
// a separator may be followed by spaces or a comment only. Anything else after
// `---` is an error, as in kubectl: the YAML decoder would otherwise read the
// first document of the chunk and silently drop the rest.
func splitDocuments(file string, data []byte) ([]document, error) {
	var docs []document
	start, first := 0, 1
	line := 1
	for offset := 0; offset < len(data); line++ {
		end := bytes.IndexByte(data[offset:], '\n')
		if end < 0 {
			end = len(data) - offset
		}
		text := strings.TrimRight(string(data[offset:offset+end]), "\r")
		next := min(offset+end+1, len(data))
		switch sep, ok := separator(text); {
		case ok:
			docs = append(docs, document{first: first, data: data[start:offset]})
			start, first = next, line+1
		case sep:
			return nil, &ParseError{File: file, Line: line, Doc: len(docs) + 2,
				Err: errors.New("only a comment may follow a '---' document separator")}
		}
		offset = next
	}
	return append(docs, document{first: first, data: data[start:]}), nil
}

// separator reports whether line starts like a separator, and whether it is a
// valid one.
func separator(line string) (looksLike, valid bool) {
	rest, ok := strings.CutPrefix(line, "---")
	if !ok {
		return false, false
	}
	rest = strings.TrimSpace(rest)
	return true, rest == "" || strings.HasPrefix(rest, "#")
}

// errNoKind is wrapped by decode errors of documents that are not Kubernetes objects.
var errNoKind = errors.New("not a Kubernetes object")

// decodeDocument turns one document into objects: none for an empty document,
// the items of a v1 List, or the object itself.
func decodeDocument(data []byte) ([]*unstructured.Unstructured, error) {
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	if string(bytes.TrimSpace(jsonData)) == "null" {
		return nil, nil // only comments or white space
	}
	var content any
	if err := utiljson.Unmarshal(jsonData, &content); err != nil {
		return nil, err
	}
	m, ok := content.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the document is a %T, not a mapping", errNoKind, content)
	}
	obj := &unstructured.Unstructured{Object: m}
	if err := checkTypeMeta(obj); err != nil {
		return nil, err
	}
	if strings.HasSuffix(obj.GetKind(), "List") && obj.IsList() {
		return listItems(obj)
	}
	return []*unstructured.Unstructured{obj}, nil
}

func checkTypeMeta(obj *unstructured.Unstructured) error {
	var missing []string
	if v, ok := obj.Object["apiVersion"].(string); !ok || v == "" {
		missing = append(missing, "apiVersion")
	}
	if v, ok := obj.Object["kind"].(string); !ok || v == "" {
		missing = append(missing, "kind")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s missing", errNoKind, strings.Join(missing, " and "))
	}
	return nil
}

// listItems expands a `kind: List` (or DeploymentList…), as kubectl apply does.
func listItems(list *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	i := 0
	err := list.EachListItem(func(o runtime.Object) error {
		i++
		item, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list item %d: unexpected type %T", i, o)
		}
		if err := checkTypeMeta(item); err != nil {
			return fmt.Errorf("list item %d: %w", i, err)
		}
		objs = append(objs, item)
		return nil
	})
	return objs, err
}
