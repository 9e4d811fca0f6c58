package main

import (
	"go/ast"
	"strings"
)

// JSON types of Go's basic types.
const (
	jsonString  = "string"
	jsonInteger = "integer"
)

// builtins are the JSON names of Go's basic types.
var builtins = map[string]string{
	"string": jsonString, "bool": "boolean", "byte": jsonInteger,
	"int": jsonInteger, "int8": jsonInteger, "int16": jsonInteger, "int32": jsonInteger, "int64": jsonInteger,
	"uint": jsonInteger, "uint8": jsonInteger, "uint16": jsonInteger, "uint32": jsonInteger, "uint64": jsonInteger,
	"float32": "number", "float64": "number",
}

// external describes a type of another package that serialises as a JSON
// scalar or free-form value; a link to its Go documentation would mislead.
type external struct {
	typ, description string
}

// externals are keyed by import path and type name.
var externals = map[string]external{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration": {typ: "string (duration)",
		description: "A Go duration such as `30s`, `1m30s`, `1h`."},
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time": {typ: "string (date-time)",
		description: "An RFC 3339 time."},
	"k8s.io/apimachinery/pkg/api/resource.Quantity": {typ: "string (quantity)",
		description: "A Kubernetes quantity such as `1Gi` or `500m`."},
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": {typ: "object (free-form)",
		description: "Any YAML or JSON value."},
	"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta": {
		description: "Standard object metadata: name, namespace, labels, annotations."},
	"k8s.io/apimachinery/pkg/apis/meta/v1.ListMeta": {
		description: "Standard list metadata."},
}

// externalOf returns the import path and name of a type of another package.
func externalOf(t *Type, e ast.Expr) (importPath, name string, ok bool) {
	sel, isSel := e.(*ast.SelectorExpr)
	if !isSel {
		return "", "", false
	}
	pkg, isIdent := sel.X.(*ast.Ident)
	if !isIdent {
		return "", "", false
	}
	p, known := t.Imports[pkg.Name]
	return p, sel.Sel.Name, known
}

// typeText renders the type of a field of t in Markdown: JSON names for basic
// types, links to the sections of this reference for the package's types and
// to pkg.go.dev for other packages' types.
func typeText(t *Type, e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		if local := t.Package.Types[x.Name]; local != nil {
			return link(local)
		}
		if b, ok := builtins[x.Name]; ok {
			return b
		}
		return x.Name
	case *ast.StarExpr:
		return typeText(t, x.X)
	case *ast.ArrayType:
		if id, ok := x.Elt.(*ast.Ident); ok && id.Name == "byte" {
			return "string (base64)"
		}
		return typeText(t, x.Elt) + " array"
	case *ast.MapType:
		return "map of " + typeText(t, x.Key) + " to " + typeText(t, x.Value)
	case *ast.SelectorExpr:
		return externalText(t, x)
	case *ast.InterfaceType:
		return "any"
	}
	return "object"
}

// externalText renders another package's type.
func externalText(t *Type, x *ast.SelectorExpr) string {
	p, name, ok := externalOf(t, x)
	if !ok {
		return name
	}
	if ext, known := externals[p+"."+name]; known && ext.typ != "" {
		return ext.typ
	}
	return "[" + name + "](https://pkg.go.dev/" + p + "#" + name + ")"
}

// externalDescription is the description of another package's type, used
// when a field has no comment of its own.
func externalDescription(t *Type, e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	p, name, ok := externalOf(t, e)
	if !ok {
		return ""
	}
	return externals[p+"."+name].description
}

// anchor is the id of a type's section: group, version and name, so that
// types of the same name in two packages do not collide.
func anchor(t *Type) string {
	id := strings.ToLower(t.Package.Group + "-" + t.Package.Version + "-" + t.Name)
	return strings.NewReplacer(".", "-", "/", "-").Replace(id)
}

// link is a Markdown link to a type's section.
func link(t *Type) string {
	return "[" + t.Name + "](#" + anchor(t) + ")"
}
