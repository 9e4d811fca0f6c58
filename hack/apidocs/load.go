package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Package is one API package: a group and version and its named types.
type Package struct {
	// Dir is the directory the package was read from, as given.
	Dir string
	// Group and Version come from the +groupName and +versionName markers of
	// the package comment; Version defaults to the package name.
	Group, Version string
	// Doc is the package comment without its markers.
	Doc string
	// Types are the package's named types by name.
	Types map[string]*Type
}

// GroupVersion is `group/version`, the apiVersion of the package's kinds.
func (p *Package) GroupVersion() string { return p.Group + "/" + p.Version }

// Type is a named type of an API package.
type Type struct {
	Name    string
	Doc     string
	Markers markers
	// Struct is true for struct types, which have Fields; other types are
	// described by Underlying.
	Struct     bool
	Fields     []Field
	Underlying ast.Expr
	// Imports maps the import names of the declaring file to import paths.
	Imports map[string]string
	Package *Package
}

// Kind reports whether the type is a kind: a root object (+kubebuilder:object:root)
// that is not a list.
func (t *Type) Kind() bool {
	if !t.Markers.has("kubebuilder:object:root=true") {
		return false
	}
	return !slices.ContainsFunc(t.Fields, func(f Field) bool { return f.Name == "Items" })
}

// Field is one field of a struct type.
type Field struct {
	// Name is the Go name; JSONName the name in the object.
	Name, JSONName string
	// Inline is true for `json:",inline"` and for embedded fields without a
	// JSON name: their fields belong to the enclosing object.
	Inline    bool
	OmitEmpty bool
	Doc       string
	Markers   markers
	Type      ast.Expr
}

// loadPackage parses the non-test Go files of dir.
func loadPackage(dir string) (*Package, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &Package{Dir: dir, Types: map[string]*Type{}}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if err := p.addFile(f); err != nil {
			return nil, err
		}
	}
	if p.Group == "" {
		return nil, fmt.Errorf("%s: no +groupName marker in the package comment", dir)
	}
	return p, nil
}

// addFile adds the file's package comment and types.
func (p *Package) addFile(f *ast.File) error {
	// The package comment is the one holding +groupName (groupversion_info.go).
	if doc, ms := splitComment(f.Doc); ms.hasValue("groupName") {
		p.Doc = doc
		p.Group, _ = ms.value("groupName")
		if p.Version, _ = ms.value("versionName"); p.Version == "" {
			p.Version = f.Name.Name
		}
	}
	imports := fileImports(f)
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			if _, dup := p.Types[ts.Name.Name]; dup {
				return fmt.Errorf("%s: type %s declared twice", p.Dir, ts.Name.Name)
			}
			p.Types[ts.Name.Name] = newType(p, gd, ts, imports)
		}
	}
	return nil
}

// newType reads a type declaration. Its comment is the spec's, or the
// declaration's when the declaration has a single spec.
func newType(p *Package, gd *ast.GenDecl, ts *ast.TypeSpec, imports map[string]string) *Type {
	cg := ts.Doc
	if cg == nil && len(gd.Specs) == 1 {
		cg = gd.Doc
	}
	t := &Type{Name: ts.Name.Name, Imports: imports, Package: p}
	t.Doc, t.Markers = splitComment(cg)
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		t.Underlying = ts.Type
		return t
	}
	t.Struct = true
	for _, f := range st.Fields.List {
		t.Fields = append(t.Fields, newFields(f)...)
	}
	return t
}

// newFields reads one field declaration, which may name several fields.
// Unexported fields and fields tagged `json:"-"` are left out.
func newFields(f *ast.Field) []Field {
	var tag reflect.StructTag
	if f.Tag != nil {
		if s, err := strconv.Unquote(f.Tag.Value); err == nil {
			tag = reflect.StructTag(s)
		}
	}
	jsonName, opts, _ := strings.Cut(tag.Get("json"), ",")
	if jsonName == "-" && opts == "" {
		return nil
	}
	doc, ms := splitComment(f.Doc)
	base := Field{JSONName: jsonName, OmitEmpty: hasOption(opts, "omitempty"), Doc: doc, Markers: ms, Type: f.Type}
	if len(f.Names) == 0 { // embedded
		base.Name = embeddedName(f.Type)
		base.Inline = hasOption(opts, "inline") || jsonName == ""
		if !ast.IsExported(base.Name) {
			return nil
		}
		return []Field{base}
	}
	fields := make([]Field, 0, len(f.Names))
	for _, n := range f.Names {
		if !ast.IsExported(n.Name) {
			continue
		}
		fd := base
		fd.Name = n.Name
		if fd.JSONName == "" {
			fd.JSONName = n.Name
		}
		fields = append(fields, fd)
	}
	return fields
}

// hasOption reports a json tag option such as omitempty.
func hasOption(opts, name string) bool {
	return slices.Contains(strings.Split(opts, ","), name)
}

// embeddedName is the field name of an embedded type: its type name.
func embeddedName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// fileImports maps the names a file uses for its imports to their paths.
func fileImports(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = p
	}
	return imports
}
