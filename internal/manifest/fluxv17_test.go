package manifest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// fluxV17Version is the helm-controller API the walk reads; `make test`
// puts its source (and that of the modules its types use) under
// $KRAAN_FLUX_API_V17, by import path (Makefile: FLUX_API_V17).
const fluxV17Version = "v1.7.1"

// goSource is the Go source of the packages a walk reads, by import path:
// what go/parser sees, nothing built. helm-controller/api v1.7.1 needs Go
// 1.27, so the walk reads its types instead of importing them.
type goSource struct {
	// dir is where a package's source is.
	dir  func(importPath string) string
	pkgs map[string]*sourcePackage
}

// sourcePackage is one package's type declarations and import names.
type sourcePackage struct {
	types   map[string]ast.Expr
	imports map[string]string // name in the source → import path
}

func (s *goSource) pkg(importPath string) (*sourcePackage, error) {
	if p, ok := s.pkgs[importPath]; ok {
		return p, nil
	}
	dir := s.dir(importPath)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", importPath, err)
	}
	p := &sourcePackage{types: map[string]ast.Expr{}, imports: map[string]string{}}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.add(f)
	}
	s.pkgs[importPath] = p
	return p, nil
}

// add reads a file's imports and type declarations.
func (p *sourcePackage) add(f *ast.File) {
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		p.imports[name] = path
	}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.TYPE {
			continue
		}
		for _, spec := range gen.Specs {
			ts := spec.(*ast.TypeSpec)
			p.types[ts.Name.Name] = ts.Type
		}
	}
}

// leafTypes are types outside the walked modules that hold a value, not
// fields: their paths end there, as in fieldPathsOf.
var leafTypes = map[string]bool{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":                 true,
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":                     true,
	"k8s.io/apimachinery/pkg/apis/meta/v1.Condition":                true,
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": true,
}

// fieldPaths lists the JSON field paths of type name of importPath, list
// items as [], as fieldPathsOf does for compiled types.
func (s *goSource) fieldPaths(importPath, name string) ([]string, error) {
	w := &sourceWalk{src: s, out: map[string]bool{}}
	decl, err := w.declared(importPath, name, "")
	if err != nil {
		return nil, err
	}
	if err := w.walk(importPath, decl, "", 0); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(w.out)), nil
}

// sourceWalk collects the paths of one walk.
type sourceWalk struct {
	src *goSource
	out map[string]bool
}

// declared is the declaration of type name in importPath.
func (w *sourceWalk) declared(importPath, name, at string) (ast.Expr, error) {
	p, err := w.src.pkg(importPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %s.%s: %w (a leaf type? add it to leafTypes)", at, importPath, name, err)
	}
	decl, ok := p.types[name]
	if !ok {
		return nil, fmt.Errorf("%s: %s has no type %s", at, importPath, name)
	}
	return decl, nil
}

func (w *sourceWalk) walk(importPath string, expr ast.Expr, prefix string, depth int) error {
	if depth > 32 {
		return fmt.Errorf("%s: types nest deeper than 32", prefix)
	}
	switch t := expr.(type) {
	case *ast.StarExpr:
		return w.walk(importPath, t.X, prefix, depth+1)
	case *ast.ArrayType:
		if id, ok := t.Elt.(*ast.Ident); ok && id.Name == "byte" {
			w.out[prefix] = true
			return nil
		}
		return w.walk(importPath, t.Elt, prefix+"[]", depth+1)
	case *ast.MapType, *ast.InterfaceType:
		w.out[prefix] = true
		return nil
	case *ast.SelectorExpr:
		return w.walkSelector(importPath, t, prefix, depth)
	case *ast.Ident:
		p, err := w.src.pkg(importPath)
		if err != nil {
			return err
		}
		decl, ok := p.types[t.Name]
		if !ok { // a predeclared type
			w.out[prefix] = true
			return nil
		}
		return w.walk(importPath, decl, prefix, depth+1)
	case *ast.StructType:
		return w.walkStruct(importPath, t, prefix, depth)
	}
	return fmt.Errorf("%s: unexpected type expression %T", prefix, expr)
}

// walkSelector follows pkg.Type into the package it names, or ends the path
// at a leaf type.
func (w *sourceWalk) walkSelector(importPath string, t *ast.SelectorExpr, prefix string, depth int) error {
	p, err := w.src.pkg(importPath)
	if err != nil {
		return err
	}
	target := p.imports[t.X.(*ast.Ident).Name]
	if leafTypes[target+"."+t.Sel.Name] {
		w.out[prefix] = true
		return nil
	}
	decl, err := w.declared(target, t.Sel.Name, prefix)
	if err != nil {
		return err
	}
	return w.walk(target, decl, prefix, depth+1)
}

// walkStruct walks each JSON field of a struct.
func (w *sourceWalk) walkStruct(importPath string, t *ast.StructType, prefix string, depth int) error {
	for _, f := range t.Fields.List {
		name, inline, skip := jsonFieldName(f)
		if skip {
			continue
		}
		p := prefix
		if !inline {
			if p != "" {
				p += "."
			}
			p += name
		}
		if err := w.walk(importPath, f.Type, p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// jsonFieldName reads a struct field as encoding/json does: its tag's name,
// inlined when embedded without a name or tagged ",inline", skipped when
// tagged "-" or unexported.
func jsonFieldName(f *ast.Field) (name string, inline, skip bool) {
	tag := ""
	if f.Tag != nil {
		unquoted, _ := strconv.Unquote(f.Tag.Value)
		tag = reflect.StructTag(unquoted).Get("json")
	}
	tagName, opts, _ := strings.Cut(tag, ",")
	switch {
	case tagName == "-":
		return "", false, true
	case len(f.Names) == 0 && tagName == "":
		return "", true, false
	case strings.Contains(","+opts+",", ",inline,"):
		return "", true, false
	case tagName != "":
		return tagName, false, false
	case !ast.IsExported(f.Names[0].Name):
		return "", false, true
	}
	return f.Names[0].Name, false, false
}

// fluxV17Source is the source under $KRAAN_FLUX_API_V17; the test fails, not
// skips, without it.
func fluxV17Source(t *testing.T) *goSource {
	t.Helper()
	root := os.Getenv("KRAAN_FLUX_API_V17")
	if root == "" {
		t.Fatal("KRAAN_FLUX_API_V17 is not set: run `make test`, which fetches helm-controller/api " + fluxV17Version + "'s source and sets it")
	}
	return &goSource{pkgs: map[string]*sourcePackage{},
		dir: func(importPath string) string { return filepath.Join(root, filepath.FromSlash(importPath)) }}
}

// TestFluxV17Parity_NoFieldSilentlyLost walks every field path of Flux
// helm-controller v1.7.1's HelmReleaseSpec, read from its source: each must
// be a field of ours (implemented, or accepted without effect) or refused at
// admission, as for v1.6.5 (TestFluxParity_NoFieldSilentlyLost); and every
// rule of the tables names a field of v1.6.5 or v1.7.1.
func TestFluxV17Parity_NoFieldSilentlyLost(t *testing.T) {
	g := NewWithT(t)
	src := fluxV17Source(t)
	paths, err := src.fieldPaths("github.com/fluxcd/helm-controller/api/v2", "HelmReleaseSpec")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(paths).To(ContainElements("chart.kind", "chart.spec.url", "chart.spec.ref.digest",
		"chart.spec.verify.matchOIDCIdentity[].issuer", "dependsOn[].readyExpr", "postRenderers[].kustomize.patches[].target.name"),
		"the walk did not reach v1.7's fields")
	// The walk reads what reflection reads of the compiled v1.6.5 types.
	g.Expect(paths).To(ContainElements(fluxFieldPaths()), "paths of v1.6.5 missing from the v1.7.1 walk")

	expectEveryFieldOurs(t, g, fluxV17Version, paths)
	for _, table := range [][]FieldRule{RefusedFields, NoEffectFields} {
		for _, r := range table {
			g.Expect(slices.ContainsFunc(paths, func(p string) bool { return p == r.Path || strings.HasPrefix(p, r.Path+".") })).
				To(BeTrue(), "rule for %s names no Flux %s field: the table is stale", r.Path, fluxV17Version)
		}
	}
}

// TestGoSource_ReadsFieldsAsReflectionDoes: on a type both can read (ours,
// whose source is in this repository), the source walk gives the paths
// reflection gives.
func TestGoSource_ReadsFieldsAsReflectionDoes(t *testing.T) {
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	const module = "github.com/kraan-io/kraan-operator/"
	src := &goSource{pkgs: map[string]*sourcePackage{}, dir: func(importPath string) string {
		return filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(importPath, module)))
	}}
	paths, err := src.fieldPaths("github.com/kraan-io/kraan-operator/api/v1alpha1", "HelmReleaseSpec")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(paths).To(Equal(slices.Sorted(maps.Keys(fieldPathsOf(reflect.TypeFor[kraanv1.HelmReleaseSpec]())))))
}
