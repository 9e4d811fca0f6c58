package manifest

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		wantFirst []int
		wantData  []string
	}{
		{name: "one document", data: "a: 1\n", wantFirst: []int{1}, wantData: []string{"a: 1\n"}},
		{name: "leading separator", data: "---\na: 1\n", wantFirst: []int{1, 2}, wantData: []string{"", "a: 1\n"}},
		{name: "three documents, CRLF", data: "a: 1\r\n---\r\nb: 2\r\n--- # c\r\nc: 3",
			wantFirst: []int{1, 3, 5}, wantData: []string{"a: 1\r\n", "b: 2\r\n", "c: 3"}},
		{name: "indented dashes are content", data: "a: |\n  ---\n  x\n", wantFirst: []int{1},
			wantData: []string{"a: |\n  ---\n  x\n"}},
		{name: "empty file", data: "", wantFirst: []int{1}, wantData: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, err := splitDocuments("f.yaml", []byte(tt.data))
			g.Expect(err).NotTo(HaveOccurred())
			var first []int
			var data []string
			for _, d := range docs {
				first = append(first, d.first)
				data = append(data, string(d.data))
			}
			g.Expect(first).To(Equal(tt.wantFirst))
			g.Expect(data).To(Equal(tt.wantData))
		})
	}
}

func TestParseError_Error(t *testing.T) {
	tests := []struct {
		name string
		err  *ParseError
		want string
	}{
		{name: "file only", err: &ParseError{File: "a.yaml", Err: errors.New("boom")}, want: "a.yaml: boom"},
		{name: "line and document", err: &ParseError{File: "a.yaml", Line: 7, Doc: 2, Err: errors.New("boom")},
			want: "a.yaml:7: document 2: boom"},
		{name: "yaml line moved to the file", err: newDocError("a.yaml", 2, 10, errors.New("yaml: line 3: found character")),
			want: "a.yaml:12: document 2: yaml: found character"},
		{name: "no yaml line", err: newDocError("a.yaml", 1, 1, errors.New("bad")), want: "a.yaml:1: document 1: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.err.Error()).To(Equal(tt.want))
		})
	}
}

func TestParseError_unwraps(t *testing.T) {
	g := NewWithT(t)
	cause := errors.New("cause")
	g.Expect(errors.Is(&ParseError{File: "a", Err: cause}, cause)).To(BeTrue())
}
