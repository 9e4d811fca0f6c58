package chart

import (
	"bytes"
	"strings"

	"sigs.k8s.io/yaml"
)

// The line-level YAML of index.yaml: keys, items, scalars and the scanner
// that reads one line at a time (see yamlIndexReader).

// keepIndexKey reports whether the key of a version entry is kept: read by
// rawVersion, or unknown to Helm (whose strict parser refuses it).
func keepIndexKey(key string) bool {
	if len(key) >= 2 && (key[0] == '"' || key[0] == '\'') && !strings.ContainsAny(key[1:len(key)-1], `"'\`) {
		key = key[1 : len(key)-1]
	}
	return keptIndexKeys[key] || !knownIndexKeys[key]
}

// appendKeyLine appends a key line of a version entry whose "-" is at column
// d: the entry's first kept line gets the "-", so that the entry stays one
// item of the batch's sequence whichever keys were cut.
func appendKeyLine(buf, line []byte, d int, first bool) []byte {
	at := len(buf)
	buf = appendLine(buf, line)
	if first {
		buf[at+d] = '-'
	} else {
		buf[at+d] = ' '
	}
	return buf
}

// appendLine appends a line, ending it with a line break if it has none.
func appendLine(buf, line []byte) []byte {
	buf = append(buf, line...)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		buf = append(buf, '\n')
	}
	return buf
}

// isItem reports whether the line has a block sequence item ("- " or a lone
// "-") at column d.
func isItem(text []byte, d int) bool {
	return len(text) > d && text[d] == '-' && (len(text) == d+1 || text[d+1] == ' ')
}

// isDocumentStart reports whether the line is a "---" with nothing after it.
func isDocumentStart(text []byte) bool {
	rest, ok := bytes.CutPrefix(text, []byte("---"))
	return ok && inlineValue(rest) == "" && (len(rest) == 0 || rest[0] == ' ')
}

// inlineValue is what follows a key's colon on its line, without spaces or
// a comment.
func inlineValue(rest []byte) string {
	s := strings.TrimSpace(string(rest))
	if strings.HasPrefix(s, "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// splitKey splits "key: value" (or "key:") into the key, as written (quotes
// included), and what follows the colon. ok is false for anything else: a
// sequence item, a flow collection, an anchor, a tag, a complex key.
func splitKey(text []byte) (key string, rest []byte, ok bool) {
	if len(text) == 0 || strings.IndexByte(keyIndicators, text[0]) >= 0 {
		return "", nil, false
	}
	end := plainKeyEnd(text)
	if text[0] == '"' || text[0] == '\'' {
		end = closingQuote(text) + 1
	}
	if end <= 0 {
		return "", nil, false
	}
	colon := end
	for colon < len(text) && text[colon] == ' ' {
		colon++
	}
	if colon >= len(text) || text[colon] != ':' || (colon+1 < len(text) && text[colon+1] != ' ') {
		return "", nil, false
	}
	return strings.TrimRight(string(text[:end]), " "), text[colon+1:], true
}

// keyIndicators are the characters a key splitKey reads cannot start with.
const keyIndicators = "-?:,[]{}#&*!|>%@` \t"

// plainKeyEnd is where a plain key ends: at the first colon followed by a
// space or the line's end; -1 if a comment starts before.
func plainKeyEnd(text []byte) int {
	for end := range text {
		switch {
		case text[end] == ':' && (end+1 == len(text) || text[end+1] == ' '):
			return end
		case text[end] == '#' && end > 0 && text[end-1] == ' ':
			return -1
		}
	}
	return len(text)
}

// closingQuote finds the quote closing the quoted scalar text starts with;
// -1 if it is not on this line.
func closingQuote(text []byte) int {
	q := text[0]
	for i := 1; i < len(text); i++ {
		switch {
		case q == '"' && text[i] == '\\':
			i++
		case q == '\'' && text[i] == '\'' && i+1 < len(text) && text[i+1] == '\'':
			i++
		case text[i] == q:
			return i
		}
	}
	return -1
}

// isNull reports whether an inline value is YAML's null.
func isNull(v string) bool {
	switch v {
	case "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// resolveKey reads a chart name as YAML does: quoted names are unquoted, and
// a plain name that YAML reads as something else (true, 1.0, null) is not a
// string.
func resolveKey(key string) (string, bool) {
	var v any
	if err := yaml.Unmarshal([]byte(key), &v); err != nil {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// lineScanner yields the lines of a document without copying them.
type lineScanner struct {
	data []byte
	pos  int // where the current line starts
	num  int // the current line's number, from 1
}

// yamlLine is one line of a document.
type yamlLine struct {
	// raw is the line with its line break.
	raw []byte
	// text is the line without its line break.
	text []byte
	// indent counts the spaces the line starts with.
	indent int
	// blank: nothing but white space, or a comment.
	blank bool
	// tab: a tab follows the indentation, which YAML forbids.
	tab bool
}

func (s *lineScanner) done() bool { return s.pos >= len(s.data) }

func (s *lineScanner) current() yamlLine {
	raw := s.data[s.pos:]
	if end := bytes.IndexByte(raw, '\n'); end >= 0 {
		raw = raw[:end+1]
	}
	text := bytes.TrimSuffix(bytes.TrimSuffix(raw, []byte("\n")), []byte("\r"))
	indent := 0
	for indent < len(text) && text[indent] == ' ' {
		indent++
	}
	content := bytes.TrimLeft(text[indent:], " \t")
	blank := len(content) == 0 || content[0] == '#'
	return yamlLine{raw: raw, text: text, indent: indent, blank: blank,
		tab: !blank && text[indent] == '\t'}
}

func (s *lineScanner) advance() {
	s.pos += len(s.current().raw)
	s.num++
}
