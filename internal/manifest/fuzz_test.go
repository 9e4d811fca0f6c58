package manifest

import (
	"errors"
	"testing"
	"testing/fstest"
)

// FuzzReadFile feeds arbitrary bytes to the decoding of one manifest file
// (split on `---`, each document decoded, Lists expanded). It proves that
// decoding never panics, that every object returned has an apiVersion and a
// kind (checkTypeMeta's guarantee, also for List items), and that every error
// is a ParseError naming the file.
func FuzzReadFile(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"apiVersion: v1\nkind: ConfigMap\n---\n# only a comment\n---\napiVersion: v1\nkind: Secret\n",
		`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}`,
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n- kind: Secret\n",
		"apiVersion: v1\nkind: List\nitems: [1, null]\n",
		"--- garbage\n",
		"- a\n- b\n",
		"a: [\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := readFile(fstest.MapFS{"m.yaml": {Data: data}}, "m.yaml")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "m.yaml" {
				t.Fatalf("error %v is not a ParseError naming m.yaml", err)
			}
			return
		}
		for _, o := range objs {
			if o.obj.GetAPIVersion() == "" || o.obj.GetKind() == "" {
				t.Fatalf("%s: object without apiVersion or kind: %v", o.origin, o.obj.Object)
			}
		}
	})
}
