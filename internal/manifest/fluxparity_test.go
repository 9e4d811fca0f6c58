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

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// fluxFieldPaths lists every JSON field path of Flux helm-controller's
// HelmReleaseSpec (the api module in go.mod, v1.6.5), list items as [].
func fluxFieldPaths() []string {
	return slices.Sorted(maps.Keys(fluxFields()))
}

// fluxFields maps each path of Flux's HelmReleaseSpec to the Go type of its leaf.
func fluxFields() map[string]reflect.Type {
	return fieldPathsOf(reflect.TypeFor[fluxv2.HelmReleaseSpec]())
}

// fieldPathsOf maps each JSON field path of t to the Go type of its leaf.
func fieldPathsOf(t reflect.Type) map[string]reflect.Type {
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
	walk(t, "")
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
	return treeHas(helmReleaseSpecFields, path)
}

// treeHas says whether tree has the path.
func treeHas(tree *fieldTree, path string) bool {
	node := tree
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
	expectEveryFieldOurs(t, g, "v1.6.5", paths)
	// That every rule names a Flux field is checked against v1.7.1, which
	// has every path of v1.6.5 and more (TestFluxV17Parity_NoFieldSilentlyLost).
}

// expectEveryFieldOurs checks that each Flux spec path is a field of ours
// (implemented, or accepted without effect) or refused at admission, and
// logs the counts.
func expectEveryFieldOurs(t *testing.T, g Gomega, version string, paths []string) {
	t.Helper()
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
		g.Expect(ourField(p)).To(BeTrue(), "Flux %s field spec.%s is neither a field of our HelmRelease nor in RefusedFields", version, p)
	}
	t.Logf("Flux %s HelmReleaseSpec: %d field paths, %d implemented, %d accepted without effect, %d refused",
		version, len(paths), implemented, noEffect, refused)
}

// TestFluxParity_EveryStatusFieldWrittenOrListed walks every field of Flux's
// HelmReleaseStatus: each must be a status field of ours (written with
// Flux's meaning, so Flux's dashboards and tooling read it), or listed in
// UnwrittenStatusFields with the reason.
func TestFluxParity_EveryStatusFieldWrittenOrListed(t *testing.T) {
	g := NewWithT(t)
	ours := newFieldTree(reflect.TypeFor[kraanv1.HelmReleaseStatus]())
	paths := slices.Sorted(maps.Keys(fieldPathsOf(reflect.TypeFor[fluxv2.HelmReleaseStatus]())))
	g.Expect(paths).To(ContainElements("inventory.entries[].id", "inventory.entries[].v", "history[].action"),
		"the walk did not reach Flux v1.6's status")
	written := 0
	for _, p := range paths {
		if covered(UnwrittenStatusFields, p) {
			g.Expect(treeHas(ours, p)).To(BeFalse(), "status.%s is ours but listed in UnwrittenStatusFields", p)
			continue
		}
		written++
		g.Expect(treeHas(ours, p)).To(BeTrue(), "Flux field status.%s is neither a field of our status nor in UnwrittenStatusFields", p)
	}
	t.Logf("Flux v1.6.5 HelmReleaseStatus: %d field paths, %d written, %d not", len(paths), written, len(paths)-written)
	for _, r := range UnwrittenStatusFields {
		g.Expect(slices.ContainsFunc(paths, func(p string) bool { return p == r.Path || strings.HasPrefix(p, r.Path+".") })).
			To(BeTrue(), "rule for status.%s names no Flux field: the table is stale", r.Path)
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
	for _, r := range UnwrittenStatusFields {
		g.Expect(string(doc)).To(ContainSubstring("`status."+r.Path+"`"), "docs/helmreleases.md does not list status.%s", r.Path)
	}
}
