package chart

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// A YAML index is read without building its whole tree: YAML parsers hold a
// node of a hundred bytes or more per scalar, so a 9 MiB index of one-letter
// keywords cost 400 MB at its peak when parsed whole. Every index generator
// (helm repo index, ChartMuseum, Harbor, chart-releaser, Artifactory, Nexus)
// writes the same block layout:
//
//	apiVersion: v1
//	entries:
//	  <chart>:
//	  - apiVersion: v2
//	    name: <chart>
//	    urls:
//	    - <url>
//	    …
//	generated: …
//
// yamlIndexReader walks that layout line by line, using only indentation,
// cuts out of each version entry the keys it does not keep (descriptions,
// keywords, maintainers, annotations, …) with the lines of their values, and
// parses what is left a batch of entries at a time, with the strict parser
// Helm uses. The keys kept are few and short, so at most a batch and one
// entry, about 128 KiB, is parsed at once. Lines the reader does not
// recognise (flow style, anchors, tabs, several documents) end the walk with
// a layoutError: such an index is parsed whole, as before, if it is small
// (maxGenericIndexSize), and refused otherwise.
const (
	// indexBatchBytes is how much of a chart's kept entries is parsed at once.
	indexBatchBytes = 64 << 10
	// maxIndexEntryBytes bounds what is kept of one version entry: its
	// name, version, apiVersion, type, urls and digest, which in real
	// indexes take a few hundred bytes.
	maxIndexEntryBytes = 64 << 10
	// maxGenericIndexSize is the largest index parsed whole when it is not in
	// the block layout: parsing YAML in general peaks at ~45 times its size.
	maxGenericIndexSize = 1 << 20
)

// keptIndexKeys are the keys of a version entry that rawVersion reads.
var keptIndexKeys = jsonFieldNames(reflect.TypeOf(rawVersion{}))

// knownIndexKeys are all the keys Helm's strict parser accepts in a version
// entry. An unknown key is kept, so that parsing fails on it as Helm's does.
var knownIndexKeys = jsonFieldNames(reflect.TypeOf(repo.ChartVersion{}))

// jsonFieldNames lists the JSON names of a struct's fields, those of
// embedded structs included.
func jsonFieldNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for name := range jsonFieldNames(ft) {
				names[name] = true
			}
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
}

// layoutError means the index is not in the block layout yamlIndexReader
// walks.
type layoutError struct {
	line   int
	reason string
}

func (e *layoutError) Error() string {
	return fmt.Sprintf("line %d is not in the block layout index generators write: %s", e.line, e.reason)
}

// parseIndexYAML reads a YAML index into b: by walking its block layout, or
// whole when it is in another layout and at most maxGenericIndexSize.
func parseIndexYAML(data []byte, b *indexBuilder) error {
	r := &yamlIndexReader{s: lineScanner{data: data, num: 1}, b: b}
	err := r.read()
	var layout *layoutError
	if !errors.As(err, &layout) {
		return err
	}
	if len(data) > maxGenericIndexSize {
		return fmt.Errorf("%w; an index in another layout is read only up to %s, since parsing YAML whole costs dozens of times its size: "+
			"serve it as `helm repo index` writes it, or as JSON", err, formatBytes(maxGenericIndexSize))
	}
	*b = *newIndexBuilder()
	return parseIndexGeneric(data, b)
}

// parseIndexGeneric parses a small index whole, as Helm does.
func parseIndexGeneric(data []byte, b *indexBuilder) error {
	var doc repo.IndexFile
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return err
	}
	b.apiVersion = doc.APIVersion
	for name, versions := range doc.Entries {
		b.chart(name)
		for _, cv := range versions {
			if cv == nil || cv.Metadata == nil {
				continue
			}
			v := &rawVersion{APIVersion: cv.APIVersion, Name: cv.Name, Version: cv.Version, Type: cv.Type, Digest: cv.Digest}
			if len(cv.URLs) > 0 {
				v.URLs = firstURL(cv.URLs[0])
			}
			b.add(name, v)
		}
	}
	return nil
}

// yamlIndexReader walks a YAML index in block layout (see above).
type yamlIndexReader struct {
	s lineScanner
	b *indexBuilder
	// chart is the chart whose versions are being read.
	chart string
	// batch holds entries of chart not parsed yet, as a block sequence.
	batch []byte
	// items is how many entries batch holds.
	items int
}

// utf8BOM may start a YAML document.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (r *yamlIndexReader) read() error {
	if bytes.HasPrefix(r.s.data, utf8BOM) {
		r.s.pos = len(utf8BOM)
	}
	r.skipBlank()
	if !r.s.done() && isDocumentStart(r.s.current().text) {
		r.s.advance()
	}
	seen := map[string]bool{}
	for r.skipBlank(); !r.s.done(); r.skipBlank() {
		l := r.s.current()
		key, rest, ok := splitKey(l.text)
		if l.indent != 0 || !ok {
			return r.layout("a top-level key was expected")
		}
		if seen[key] {
			return fmt.Errorf("line %d: key %q already set in map", r.s.num, key)
		}
		seen[key] = true
		if err := r.topLevel(key, rest, l.raw); err != nil {
			return err
		}
	}
	return nil
}

// topLevel reads the value of a top-level key; the scanner is on its line.
func (r *yamlIndexReader) topLevel(key string, rest, keyLine []byte) error {
	line := r.s.num
	r.s.advance()
	switch key {
	case "apiVersion":
		return r.apiVersion(keyLine)
	case "entries":
		return r.entries(rest)
	case "generated", "serverInfo", "publicKeys":
		r.value(0, nil)
		return nil
	default:
		return fmt.Errorf("line %d: unknown field %q", line, key)
	}
}

// apiVersion parses the document's apiVersion from its key line and value.
func (r *yamlIndexReader) apiVersion(keyLine []byte) error {
	snippet := appendLine(nil, keyLine)
	snippet = r.value(0, snippet)
	if len(snippet) > maxIndexEntryBytes {
		return r.layout("apiVersion is too long")
	}
	var doc struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := yaml.UnmarshalStrict(snippet, &doc); err != nil {
		return err
	}
	r.b.apiVersion = doc.APIVersion
	return nil
}

// entries reads the entries mapping: one key per chart, at one indentation.
func (r *yamlIndexReader) entries(rest []byte) error {
	if v := inlineValue(rest); v != "" && v != "{}" && !isNull(v) {
		return r.layout("entries is not a block mapping")
	}
	inline := inlineValue(rest) != ""
	seen := map[string]bool{}
	indent := -1
	for r.skipBlank(); !r.s.done(); r.skipBlank() {
		l := r.s.current()
		if l.indent == 0 {
			return nil
		}
		if indent < 0 {
			indent = l.indent
		}
		key, rest, ok := splitKey(l.text[l.indent:])
		if inline || l.indent != indent || l.tab || !ok {
			return r.layout("a chart name was expected")
		}
		name, ok := resolveKey(key)
		if !ok {
			return r.layout("a chart name YAML reads as a string was expected")
		}
		if seen[name] {
			return fmt.Errorf("line %d: key %q already set in map", r.s.num, name)
		}
		seen[name] = true
		r.s.advance()
		if err := r.versions(name, rest, indent); err != nil {
			return err
		}
	}
	return nil
}

// versions reads the sequence of a chart's version entries, whose key is at
// indentation e. The sequence may be at e itself, as goyaml writes it.
func (r *yamlIndexReader) versions(name string, rest []byte, e int) error {
	r.b.chart(name)
	if v := inlineValue(rest); v != "" && v != "[]" && !isNull(v) {
		return r.layout("the versions of a chart are not a block sequence")
	}
	inline := inlineValue(rest) != ""
	r.chart = name
	d := -1
	for r.skipBlank(); !r.s.done(); r.skipBlank() {
		l := r.s.current()
		if l.indent < e || (l.indent == e && !isItem(l.text, e)) {
			break
		}
		if d < 0 {
			d = l.indent
		}
		if inline || l.indent != d || l.tab || !isItem(l.text, d) {
			return r.layout("a version entry (\"- \") was expected")
		}
		if err := r.item(d); err != nil {
			return err
		}
	}
	return r.flush()
}

// item reads one version entry, whose "-" is at column d, into the batch,
// keeping only the keys rawVersion reads and those Helm would refuse.
func (r *yamlIndexReader) item(d int) error {
	m, null, err := r.itemStart(d)
	if err != nil || null {
		return err
	}
	kept, err := r.itemKeys(d, m)
	if err != nil {
		return err
	}
	if kept {
		r.items++
	}
	if len(r.batch) >= indexBatchBytes {
		return r.flush()
	}
	return nil
}

// itemStart finds the column m of the keys of the entry whose "-" is at
// column d, leaving the scanner on its first key; null: the entry is empty,
// and skipped (Helm drops it).
func (r *yamlIndexReader) itemStart(d int) (m int, null bool, err error) {
	first := r.s.current()
	m = d + 1
	for m < len(first.text) && first.text[m] == ' ' {
		m++
	}
	content := first.text[m:]
	switch {
	case len(content) == 0 || content[0] == '#':
		// A "-" alone: the keys start on the next line, or the entry is null.
		r.s.advance()
		r.skipBlank()
		if r.s.done() || r.s.current().indent <= d {
			return 0, true, nil
		}
		if m = r.s.current().indent; m < d+2 {
			return 0, false, r.layout("a version entry's keys must be indented past its \"- \"")
		}
	case isNull(inlineValue(content)):
		r.s.advance()
		return 0, true, nil
	}
	return m, false, nil
}

// itemKeys reads the keys of an entry at column m into the batch, and says
// whether any was kept.
func (r *yamlIndexReader) itemKeys(d, m int) (kept bool, err error) {
	start := len(r.batch)
	for {
		l := r.s.current()
		key, _, ok := splitKey(l.text[m:])
		if l.tab || !ok {
			return false, r.layout("a key of a version entry was expected")
		}
		keep := keepIndexKey(key)
		if keep {
			r.batch = appendKeyLine(r.batch, l.raw, d, !kept)
			kept = true
		}
		r.s.advance()
		if keep {
			r.batch = r.value(m, r.batch)
		} else {
			r.value(m, nil)
		}
		if len(r.batch)-start > maxIndexEntryBytes {
			return false, r.layout(fmt.Sprintf("a version entry of %s keeps more than %s", r.chart, formatBytes(maxIndexEntryBytes)))
		}
		if r.s.done() || r.s.current().indent != m {
			return kept, nil
		}
	}
}

// flush parses the batch of entries of the current chart.
func (r *yamlIndexReader) flush() error {
	defer func() { r.batch, r.items = r.batch[:0], 0 }()
	if r.items == 0 {
		return nil
	}
	var versions []*rawVersion
	if err := yaml.UnmarshalStrict(r.batch, &versions); err != nil {
		return fmt.Errorf("versions of chart %s: %w", r.chart, err)
	}
	if len(versions) != r.items {
		return r.layout(fmt.Sprintf("%d version entries of %s read as %d", r.items, r.chart, len(versions)))
	}
	for _, v := range versions {
		r.b.add(r.chart, v)
	}
	return nil
}

// value consumes the lines of the value of a key at indentation p: those
// indented past p, blank lines and comments, and a sequence's items at p
// itself (goyaml writes a mapping's sequences at the key's indentation). They
// are appended to buf unless it is nil.
func (r *yamlIndexReader) value(p int, buf []byte) []byte {
	for !r.s.done() {
		l := r.s.current()
		if !l.blank && l.indent < p || (l.indent == p && !l.blank && !isItem(l.text, p)) {
			break
		}
		if buf != nil {
			buf = appendLine(buf, l.raw)
		}
		r.s.advance()
	}
	return buf
}

// skipBlank moves past blank and comment lines.
func (r *yamlIndexReader) skipBlank() {
	for !r.s.done() && r.s.current().blank {
		r.s.advance()
	}
}

func (r *yamlIndexReader) layout(reason string) error {
	return &layoutError{line: r.s.num, reason: reason}
}
