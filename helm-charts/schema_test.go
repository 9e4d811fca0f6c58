package helmcharts_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// jsonSchema is the part of a values.schema.json node the comparison reads.
type jsonSchema struct {
	Type       any                    `json:"type"`
	Properties map[string]*jsonSchema `json:"properties"`
	Items      *jsonSchema            `json:"items"`
	Required   []string               `json:"required"`
	Enum       []any                  `json:"enum"`
	Pattern    string                 `json:"pattern"`
	MinLength  *int64                 `json:"minLength"`
	MaxLength  *int64                 `json:"maxLength"`
	MaxItems   *int64                 `json:"maxItems"`
	Minimum    *float64               `json:"minimum"`
	Maximum    *float64               `json:"maximum"`
}

// crdSpecSchema returns the spec schema of the CRD in config/crd/bases.
func crdSpecSchema(t *testing.T, file string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
}

func loadValuesSchema(t *testing.T, chart string) *jsonSchema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := &jsonSchema{}
	if err := json.Unmarshal(data, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// crdTypes is the set of JSON types a CRD node allows; int-or-string
// quantities allow both.
func crdTypes(p apiextensionsv1.JSONSchemaProps) []string {
	if p.XIntOrString {
		return []string{"integer", "string"}
	}
	return []string{p.Type}
}

func schemaTypes(s *jsonSchema) []string {
	out := make([]string, 0, 2)
	switch v := s.Type.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
	}
	sort.Strings(out)
	return out
}

// compareSchemas lists every disagreement between a CRD node and the values
// schema node at path. Where the values schema stops describing properties
// (Kubernetes types such as env and resources) only the types are compared,
// but no values-schema property may be unknown to the CRD.
func compareSchemas(path string, crd apiextensionsv1.JSONSchemaProps, vs *jsonSchema) []string {
	var diffs []string
	if got, want := schemaTypes(vs), crdTypes(crd); !slices.Equal(got, want) {
		diffs = append(diffs, fmt.Sprintf("%s: type %v, CRD has %v", path, got, want))
	}
	diffs = append(diffs, compareConstraints(path, crd, vs)...)
	for name, child := range vs.Properties {
		crdChild, ok := crd.Properties[name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s.%s: not in the CRD", path, name))
			continue
		}
		diffs = append(diffs, compareSchemas(path+"."+name, crdChild, child)...)
	}
	if vs.Properties != nil {
		for name := range crd.Properties {
			if _, ok := vs.Properties[name]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing from values.schema.json", path, name))
			}
		}
	}
	if vs.Items != nil && crd.Items != nil && crd.Items.Schema != nil {
		diffs = append(diffs, compareSchemas(path+"[]", *crd.Items.Schema, vs.Items)...)
	}
	return diffs
}

// compareConstraints compares the validations a user hits first: required
// fields, enums, patterns and bounds.
func compareConstraints(path string, crd apiextensionsv1.JSONSchemaProps, vs *jsonSchema) []string {
	var diffs []string
	check := func(what string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			diffs = append(diffs, fmt.Sprintf("%s: %s %v, CRD has %v", path, what, got, want))
		}
	}
	if vs.Properties != nil {
		check("required", sorted(vs.Required), sorted(crd.Required))
	}
	crdEnum := make([]any, 0, len(crd.Enum))
	for _, e := range crd.Enum {
		var v any
		_ = json.Unmarshal(e.Raw, &v)
		crdEnum = append(crdEnum, v)
	}
	if len(crdEnum) == 0 {
		crdEnum = nil
	}
	check("enum", vs.Enum, crdEnum)
	check("pattern", vs.Pattern, crd.Pattern)
	check("minLength", vs.MinLength, crd.MinLength)
	check("maxLength", vs.MaxLength, crd.MaxLength)
	check("maxItems", vs.MaxItems, crd.MaxItems)
	check("minimum", vs.Minimum, crd.Minimum)
	check("maximum", vs.Maximum, crd.Maximum)
	return diffs
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

func TestHabitatChart_ValuesSchema_MatchesCRD(t *testing.T) {
	g := NewWithT(t)
	diffs := compareSchemas("spec", crdSpecSchema(t, "habitat.kraan.io_habitats.yaml"), loadValuesSchema(t, "habitat"))
	g.Expect(diffs).To(BeEmpty())
}

func TestCompareSchemas_DetectsDrift(t *testing.T) {
	g := NewWithT(t)
	crd := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"a": {Type: "string", Pattern: "^x$"},
		"b": {Type: "integer"},
	}}
	vs := &jsonSchema{Type: "object", Properties: map[string]*jsonSchema{
		"a": {Type: "string"},
		"c": {Type: "string"},
	}}
	g.Expect(compareSchemas("spec", crd, vs)).To(ConsistOf(
		"spec.a: pattern , CRD has ^x$",
		"spec.c: not in the CRD",
		"spec.b: missing from values.schema.json",
	))
}
