package manifest

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	fluxv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fluxFieldPaths lists every JSON field path of Flux helm-controller's
// HelmReleaseSpec (the api module in go.mod, v1.4.x), list items as [].
func fluxFieldPaths() []string {
	return slices.Sorted(maps.Keys(fluxFields()))
}

// fluxFields maps each Flux field path to the Go type of its leaf.
func fluxFields() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		list := false
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			list = list || t.Kind() == reflect.Slice
			t = t.Elem()
		}
		if list {
			prefix += "[]"
		}
		if t.Kind() != reflect.Struct || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
			out[prefix] = t
			return
		}
		for _, f := range reflect.VisibleFields(t) {
			name, ok := jsonName(f)
			if !ok {
				continue
			}
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			walk(f.Type, p)
		}
	}
	walk(reflect.TypeFor[fluxv2.HelmReleaseSpec](), "")
	return out
}

// covered says whether a rule of table covers path (the rule's path or a
// parent of it).
func covered(table []FieldRule, path string) bool {
	return slices.ContainsFunc(table, func(r FieldRule) bool {
		return path == r.Path || strings.HasPrefix(path, r.Path+".")
	})
}

// ourField says whether our HelmReleaseSpec has the path.
func ourField(path string) bool {
	node := helmReleaseSpecFields
	for _, step := range strings.Split(strings.ReplaceAll(path, "[]", ""), ".") {
		if node.children == nil {
			return true // an opaque leaf (values, a Duration) holds everything below
		}
		if node = node.children[step]; node == nil {
			return false
		}
	}
	return true
}

// TestFluxParity_NoFieldSilentlyLost walks every field of Flux's
// HelmReleaseSpec: each must be a field of ours, or refused, and a refused one
// must be refused at admission too (our type has it, so the API server does
// not prune it silently; api/invalid_test.go proves the CEL rule rejects it).
func TestFluxParity_NoFieldSilentlyLost(t *testing.T) {
	g := NewWithT(t)
	paths := fluxFieldPaths()
	g.Expect(len(paths)).To(BeNumerically(">", 100), "the walk did not reach Flux's nested structs")
	var implemented, refused, noEffect int
	for _, p := range paths {
		switch {
		case covered(RefusedFields, p):
			refused++
		case covered(NoEffectFields, p):
			noEffect++
		default:
			implemented++
		}
		g.Expect(ourField(p)).To(BeTrue(), "Flux field spec.%s is neither a field of our HelmRelease nor in RefusedFields", p)
	}
	t.Logf("Flux v2 HelmReleaseSpec: %d field paths, %d implemented, %d accepted without effect, %d refused",
		len(paths), implemented, noEffect, refused)
	for _, table := range [][]FieldRule{RefusedFields, NoEffectFields} {
		for _, r := range table {
			g.Expect(slices.ContainsFunc(paths, func(p string) bool { return p == r.Path || strings.HasPrefix(p, r.Path+".") })).
				To(BeTrue(), "rule for %s names no Flux field: the table is stale", r.Path)
		}
	}
}

// TestFluxParity_EveryFluxFieldConverts builds a Flux HelmRelease that sets
// every field path (lists with one item) and converts it: only the refused
// fields may stop it, and nothing may be dropped on the way.
func TestFluxParity_EveryFluxFieldConverts(t *testing.T) {
	g := NewWithT(t)
	spec := map[string]any{}
	for p, leaf := range fluxFields() {
		if covered(RefusedFields, p) {
			continue
		}
		setSample(spec, strings.Split(p, "."), sampleOf(leaf))
	}
	obj := object(t, "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: all, namespace: team}\nspec: {}")
	obj.Object["spec"] = spec
	// Flux allows chart or chartRef; both are set here only to walk every field.
	delete(spec, "chartRef")
	got, err := ConvertHelmRelease(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Object["spec"]).To(Equal(spec), "a field changed or was dropped in conversion")
}

// sampleOf is a valid value of a leaf type, as the YAML decoder gives it.
func sampleOf(t reflect.Type) any {
	switch {
	case t == reflect.TypeFor[metav1.Duration]():
		return "1m"
	case t == reflect.TypeFor[apiextensionsv1.JSON]():
		return map[string]any{"key": "value"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return true
	case reflect.Int, reflect.Int32, reflect.Int64:
		return int64(1)
	case reflect.Map:
		return map[string]any{"key": "value"}
	default:
		return "x"
	}
}

// setSample sets v at path, creating maps and one-item lists.
func setSample(m map[string]any, path []string, v any) {
	name, list := strings.CutSuffix(path[0], "[]")
	if len(path) == 1 {
		if list {
			v = []any{v}
		}
		m[name] = v
		return
	}
	var child map[string]any
	if list {
		items, _ := m[name].([]any)
		if len(items) == 0 {
			items = []any{map[string]any{}}
			m[name] = items
		}
		child, _ = items[0].(map[string]any)
	} else {
		if _, ok := m[name].(map[string]any); !ok {
			m[name] = map[string]any{}
		}
		child = m[name].(map[string]any)
	}
	setSample(child, path[1:], v)
}

// TestFluxParity_DocsListEveryRule keeps docs/helmreleases.md's compatibility
// table true to the tables here.
func TestFluxParity_DocsListEveryRule(t *testing.T) {
	g := NewWithT(t)
	doc, err := os.ReadFile("../../docs/helmreleases.md")
	g.Expect(err).NotTo(HaveOccurred())
	for _, table := range [][]FieldRule{RefusedFields, NoEffectFields} {
		for _, r := range table {
			g.Expect(string(doc)).To(ContainSubstring("`spec."+r.Path+"`"), "docs/helmreleases.md does not list %s", r.Path)
		}
	}
}
