package main

import (
	"go/ast"
	"strconv"
	"strings"
)

// markers are the `+name[=value]` lines of a comment, without the plus sign,
// in source order: `+optional`, `+kubebuilder:default="1m"`,
// `+kubebuilder:resource:scope=Cluster,shortName={al,layer}`.
type markers []string

// splitComment separates a comment's prose from its markers. Paragraphs of the
// prose are separated by one empty line; directives such as //nolint and
// //go:generate are dropped.
func splitComment(cg *ast.CommentGroup) (doc string, ms markers) {
	if cg == nil {
		return "", nil
	}
	var lines []string
	for _, c := range cg.List {
		for _, line := range commentLines(c.Text) {
			switch trimmed := strings.TrimSpace(line); {
			case strings.HasPrefix(trimmed, "+"):
				ms = append(ms, strings.TrimSpace(trimmed[1:]))
			case isDirective(line):
			default:
				lines = append(lines, trimmed)
			}
		}
	}
	return joinParagraphs(lines), ms
}

// commentLines returns the text lines of one // or /* */ comment.
func commentLines(text string) []string {
	if rest, ok := strings.CutPrefix(text, "//"); ok {
		return []string{rest}
	}
	text = strings.TrimSuffix(strings.TrimPrefix(text, "/*"), "*/")
	return strings.Split(text, "\n")
}

// isDirective reports a //nolint or //go: style line: no space after the slashes.
func isDirective(line string) bool {
	return line != "" && line[0] != ' ' && line[0] != '\t' &&
		(strings.HasPrefix(line, "nolint") || strings.Contains(strings.SplitN(line, " ", 2)[0], ":"))
}

// joinParagraphs joins lines into paragraphs: lines of one paragraph with a
// space, paragraphs with "\n\n".
func joinParagraphs(lines []string) string {
	var paragraphs []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paragraphs = append(paragraphs, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, l := range lines {
		if l == "" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return strings.Join(paragraphs, "\n\n")
}

// has reports a marker without value, such as +optional.
func (ms markers) has(name string) bool {
	for _, m := range ms {
		if m == name {
			return true
		}
	}
	return false
}

// value returns the value of the first marker `name=value`, unquoted.
func (ms markers) value(name string) (string, bool) {
	for _, m := range ms {
		if v, ok := strings.CutPrefix(m, name+"="); ok {
			return unquote(v), true
		}
	}
	return "", false
}

// hasValue reports a marker `name=value`.
func (ms markers) hasValue(name string) bool {
	_, ok := ms.value(name)
	return ok
}

// args returns the arguments of every marker `name:key=value,key=value`, one
// map per marker, in source order.
func (ms markers) args(name string) []map[string]string {
	var all []map[string]string
	for _, m := range ms {
		if rest, ok := strings.CutPrefix(m, name+":"); ok {
			all = append(all, parseArgs(rest))
		}
	}
	return all
}

// parseArgs parses `key=value,key="quoted, value",key={a,b}`. A value is a Go
// string ("…" or `…`), a {…} list, or anything up to the next comma.
func parseArgs(s string) map[string]string {
	args := map[string]string{}
	for s != "" {
		key, rest, ok := strings.Cut(s, "=")
		if !ok {
			args[strings.TrimSpace(s)] = ""
			break
		}
		var v string
		v, s = nextValue(rest)
		args[strings.TrimSpace(key)] = v
		s = strings.TrimPrefix(s, ",")
	}
	return args
}

// nextValue splits off the value at the start of s and returns it unquoted
// with the rest of s.
func nextValue(s string) (value, rest string) {
	if s != "" && (s[0] == '"' || s[0] == '`') {
		if q, err := strconv.QuotedPrefix(s); err == nil {
			return unquote(q), s[len(q):]
		}
	}
	if strings.HasPrefix(s, "{") {
		if end := strings.Index(s, "}"); end >= 0 {
			return s[:end+1], s[end+1:]
		}
	}
	if i := strings.Index(s, ","); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// unquote removes Go string quotes, if any.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '`') {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return v
}

// list splits a marker list value: `{a,b}` or `a;b`.
func list(v string) []string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		v = v[1 : len(v)-1]
		return strings.Split(v, ",")
	}
	return strings.Split(v, ";")
}

// firstSentence returns the text up to the first ". " or the end of the
// first paragraph.
func firstSentence(doc string) string {
	doc, _, _ = strings.Cut(doc, "\n\n")
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}
