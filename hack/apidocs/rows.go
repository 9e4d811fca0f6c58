package main

import (
	"strings"
)

// row is one line of a type's field table.
type row struct {
	name, typ, required, def, validation, description string
}

// Values of the required column.
const (
	isRequired = "required"
	isOptional = "optional"
)

// typeMetaPath is the package of TypeMeta, whose inlined fields are apiVersion and kind.
const typeMetaPath = "k8s.io/apimachinery/pkg/apis/meta/v1"

// rows returns the field table of t, with the fields of inlined types in
// place of the embedded field.
func rows(t *Type) []row {
	var rs []row
	for _, f := range t.Fields {
		if f.Inline {
			rs = append(rs, inlineRows(t, f)...)
			continue
		}
		rs = append(rs, fieldRow(t, f))
	}
	return rs
}

// inlineRows are the rows of an inlined field: the fields of our own types,
// apiVersion and kind for TypeMeta, and one row naming the type otherwise.
func inlineRows(t *Type, f Field) []row {
	if local := localType(t, f.Type); local != nil && local.Struct {
		return rows(local)
	}
	if p, name, ok := externalOf(t, f.Type); ok && p == typeMetaPath && name == "TypeMeta" {
		return typeMetaRows(t)
	}
	r := fieldRow(t, f)
	r.name = "(inline)"
	return []row{r}
}

// typeMetaRows are the apiVersion and kind rows of a kind.
func typeMetaRows(t *Type) []row {
	apiVersion, kind := "APIVersion of the object.", "Kind of the object."
	if t.Kind() {
		apiVersion, kind = code(t.Package.GroupVersion()), code(t.Name)
	}
	return []row{
		{name: "apiVersion", typ: jsonString, required: isRequired, description: apiVersion},
		{name: "kind", typ: jsonString, required: isRequired, description: kind},
	}
}

// fieldRow describes one field.
func fieldRow(t *Type, f Field) row {
	r := row{
		name:        f.JSONName,
		typ:         typeText(t, f.Type),
		required:    required(f),
		validation:  strings.Join(validations(f.Markers), "<br>"),
		description: escapeProse(f.Doc),
	}
	if v, ok := f.Markers.value("kubebuilder:default"); ok {
		r.def = code(v)
	}
	if r.description == "" {
		r.description = fallbackDescription(t, f)
	}
	return r
}

// required is "required" or "optional": the +required/+optional markers
// decide, then, as for controller-gen, omitempty makes a field optional.
func required(f Field) string {
	switch {
	case f.Markers.has("required"), f.Markers.has("kubebuilder:validation:Required"):
		return isRequired
	case f.Markers.has("optional"), f.Markers.has("kubebuilder:validation:Optional"), f.OmitEmpty:
		return isOptional
	}
	return isRequired
}

// fallbackDescription describes a field without a comment by its type: the
// first sentence of our type's comment, or a fixed text for well-known types.
func fallbackDescription(t *Type, f Field) string {
	if local := localType(t, f.Type); local != nil {
		return firstSentence(local.Doc)
	}
	return externalDescription(t, f.Type)
}

// validationMarkers are the simple +kubebuilder:validation markers shown, in
// this order, with their label.
var validationMarkers = []struct{ marker, label string }{
	{"Enum", "one of"},
	{"Format", "format"},
	{"Minimum", "minimum"},
	{"ExclusiveMinimum", "exclusive minimum"},
	{"Maximum", "maximum"},
	{"ExclusiveMaximum", "exclusive maximum"},
	{"MultipleOf", "multiple of"},
	{"MinLength", "min length"},
	{"MaxLength", "max length"},
	{"Pattern", "pattern"},
	{"MinItems", "min items"},
	{"MaxItems", "max items"},
	{"UniqueItems", "unique items"},
	{"MinProperties", "min properties"},
	{"MaxProperties", "max properties"},
}

// validations describes the validation markers of a field, its items' and
// its list type, then its CEL rules by their messages.
func validations(ms markers) []string {
	var out []string
	for _, prefix := range []struct{ marker, label string }{
		{"kubebuilder:validation:", ""}, {"kubebuilder:validation:items:", "items: "},
	} {
		for _, vm := range validationMarkers {
			v, ok := ms.value(prefix.marker + vm.marker)
			if !ok {
				continue
			}
			out = append(out, prefix.label+vm.label+" "+validationValue(vm.marker, v))
		}
	}
	switch v, _ := ms.value("listType"); v {
	case "set":
		out = append(out, "unique items")
	case "map":
		if key, ok := ms.value("listMapKey"); ok {
			out = append(out, "items unique by "+code(key))
		}
	}
	return append(out, ruleMessages(ms)...)
}

// validationValue formats a marker's value: enums as a list of code spans,
// everything else as one.
func validationValue(marker, v string) string {
	if marker != "Enum" {
		return code(v)
	}
	values := list(v)
	for i, e := range values {
		values[i] = code(unquote(e))
	}
	return strings.Join(values, ", ")
}

// ruleMessages are the messages of the CEL rules (+kubebuilder:validation:XValidation),
// or the rules themselves when they have none.
func ruleMessages(ms markers) []string {
	var out []string
	for _, args := range ms.args("kubebuilder:validation:XValidation") {
		if m := args["message"]; m != "" {
			out = append(out, "rule: "+escapeProse(m))
		} else {
			out = append(out, "rule: "+code(args["rule"]))
		}
	}
	return out
}

// code is a Markdown code span of s, fenced with more backticks than s holds.
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
