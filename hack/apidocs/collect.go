package main

import (
	"go/ast"
	"slices"
	"sort"
)

// section is one type of the reference: a kind, or a type a kind uses.
type section struct {
	Type *Type
	// UsedBy are the documented types with a field of this type, by name.
	UsedBy []*Type
}

// collect returns, for each package in order, its kinds sorted by name, each
// followed by the types it uses depth-first in field order (the order a
// reader meets them when reading the kind's spec, then its status). A type is
// documented once, under the first kind that uses it; types no kind uses are
// left out.
func collect(pkgs []*Package) [][]*section {
	all := make([][]*section, 0, len(pkgs))
	for _, p := range pkgs {
		c := &collector{seen: map[*Type]*section{}}
		for _, k := range kinds(p) {
			c.walk(k, nil)
		}
		for _, s := range c.order {
			sort.Slice(s.UsedBy, func(i, j int) bool { return s.UsedBy[i].Name < s.UsedBy[j].Name })
		}
		all = append(all, c.order)
	}
	return all
}

// kinds returns the kinds of p sorted by name.
func kinds(p *Package) []*Type {
	var ks []*Type
	for _, t := range p.Types {
		if t.Kind() {
			ks = append(ks, t)
		}
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Name < ks[j].Name })
	return ks
}

type collector struct {
	seen  map[*Type]*section
	order []*section
}

// walk documents t, used by parent (nil for a kind), and the types it uses.
func (c *collector) walk(t, parent *Type) {
	if s, ok := c.seen[t]; ok {
		if parent != nil && !slices.Contains(s.UsedBy, parent) {
			s.UsedBy = append(s.UsedBy, parent)
		}
		return
	}
	s := &section{Type: t}
	if parent != nil {
		s.UsedBy = append(s.UsedBy, parent)
	}
	c.seen[t] = s
	c.order = append(c.order, s)
	c.walkFields(t, t)
}

// walkFields walks the types of t's fields; fields of inlined types belong
// to owner, the type that is documented.
func (c *collector) walkFields(t, owner *Type) {
	for _, f := range t.Fields {
		used := localType(t, f.Type)
		switch {
		case used == nil:
		case f.Inline && used.Struct:
			c.walkFields(used, owner)
		default:
			c.walk(used, owner)
		}
	}
}

// localType is the type of t's package that e names, through pointers,
// slices and maps; nil for built-in and other packages' types.
func localType(t *Type, e ast.Expr) *Type {
	switch x := e.(type) {
	case *ast.Ident:
		return t.Package.Types[x.Name]
	case *ast.StarExpr:
		return localType(t, x.X)
	case *ast.ArrayType:
		return localType(t, x.Elt)
	case *ast.MapType:
		return localType(t, x.Value)
	}
	return nil
}
