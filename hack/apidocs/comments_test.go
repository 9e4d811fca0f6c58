package main

import (
	"go/ast"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSplitComment_SeparatesProseAndMarkers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lines       []string
		wantDoc     string
		wantMarkers markers
	}{
		{name: "nil comment"},
		{name: "prose lines joined, markers kept in order",
			lines:       []string{"// Size of the", "// widget.", "// +optional", "// +kubebuilder:default=3"},
			wantDoc:     "Size of the widget.",
			wantMarkers: markers{"optional", "kubebuilder:default=3"}},
		{name: "paragraphs",
			lines:   []string{"// One.", "//", "// Two.", "//"},
			wantDoc: "One.\n\nTwo."},
		{name: "directives dropped",
			lines:   []string{"// Doc.", "//nolint:funlen // long", "//go:generate x"},
			wantDoc: "Doc."},
		{name: "block comment",
			lines:       []string{"/* Doc\n +required\n*/"},
			wantDoc:     "Doc",
			wantMarkers: markers{"required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var cg *ast.CommentGroup
			if tc.lines != nil {
				cg = &ast.CommentGroup{}
				for _, l := range tc.lines {
					cg.List = append(cg.List, &ast.Comment{Text: l})
				}
			}
			doc, ms := splitComment(cg)
			g.Expect(doc).To(Equal(tc.wantDoc))
			g.Expect(ms).To(Equal(tc.wantMarkers))
		})
	}
}

func TestMarkers_Value_UnquotesStringsAndRawStrings(t *testing.T) {
	g := NewWithT(t)
	ms := markers{`kubebuilder:default="1m"`, "kubebuilder:validation:Pattern=`^a|b$`", "kubebuilder:validation:Minimum=0", "optional"}
	for marker, want := range map[string]string{
		"kubebuilder:default":            "1m",
		"kubebuilder:validation:Pattern": "^a|b$",
		"kubebuilder:validation:Minimum": "0",
	} {
		v, ok := ms.value(marker)
		g.Expect(ok).To(BeTrue(), marker)
		g.Expect(v).To(Equal(want), marker)
	}
	_, ok := ms.value("optional")
	g.Expect(ok).To(BeFalse(), "a marker without value has no value")
	g.Expect(ms.has("optional")).To(BeTrue())
}

func TestMarkers_Args_ParsesQuotedListsAndBare(t *testing.T) {
	g := NewWithT(t)
	ms := markers{
		`kubebuilder:validation:XValidation:rule="a, b",message="needs \"x\", y"`,
		"kubebuilder:resource:scope=Cluster,shortName={al,layer},categories={kraan}",
	}
	g.Expect(ms.args("kubebuilder:validation:XValidation")).To(Equal([]map[string]string{{"rule": "a, b", "message": `needs "x", y`}}))
	g.Expect(ms.args("kubebuilder:resource")).To(Equal([]map[string]string{{"scope": "Cluster", "shortName": "{al,layer}", "categories": "{kraan}"}}))
	g.Expect(list("{al,layer}")).To(Equal([]string{"al", "layer"}))
	g.Expect(list("a;b;c")).To(Equal([]string{"a", "b", "c"}))
}

func TestCode_FencesAroundBackticks(t *testing.T) {
	g := NewWithT(t)
	g.Expect(code("a")).To(Equal("`a`"))
	g.Expect(code("a`b")).To(Equal("``a`b``"))
	g.Expect(code("`a")).To(Equal("`` `a ``"))
}

func TestEscapeProse_EscapesOnlyOutsideCode(t *testing.T) {
	g := NewWithT(t)
	g.Expect(escapeProse("as <name>@`<version>` and ``x`<y>`` <z")).To(Equal("as &lt;name>@`<version>` and ``x`<y>`` &lt;z"))
	g.Expect(escapeProse("an unclosed ` <a>")).To(Equal("an unclosed ` &lt;a>"))
}
