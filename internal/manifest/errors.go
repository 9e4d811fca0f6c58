package manifest

import (
	"fmt"
	"regexp"
	"strconv"
)

// ParseError is a file of the layer that could not be turned into objects. It
// names the file (relative to the artifact root), the line when the decoder
// gave one, and the YAML document (1-based) it was found in.
type ParseError struct {
	// File is the file's path relative to the artifact root.
	File string
	// Line in File, 1-based; 0 when unknown.
	Line int
	// Doc is the document's index in File, 1-based; 0 when the whole file failed.
	Doc int
	// Err is the cause.
	Err error
}

// Error reads like a compiler's: "apps/podinfo.yaml:12: document 2: …".
func (e *ParseError) Error() string {
	where := e.File
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	if e.Doc > 0 {
		where += fmt.Sprintf(": document %d", e.Doc)
	}
	return where + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// yamlLine finds the line number YAML decoders put in their messages
// ("yaml: line 3: mapping values are not allowed in this context").
var yamlLine = regexp.MustCompile(`line (\d+): `)

// newDocError builds a ParseError for document doc of file, which starts at
// line first. A line number in err's text is relative to the document; it is
// moved to the file's numbering and removed from the text so the message does
// not carry two different line numbers.
func newDocError(file string, doc, first int, err error) *ParseError {
	pe := &ParseError{File: file, Doc: doc, Line: first, Err: err}
	m := yamlLine.FindStringSubmatchIndex(err.Error())
	if m == nil {
		return pe
	}
	n, convErr := strconv.Atoi(err.Error()[m[2]:m[3]])
	if convErr != nil {
		return pe
	}
	pe.Line = first + n - 1
	pe.Err = fmt.Errorf("%s%s", err.Error()[:m[0]], err.Error()[m[1]:])
	return pe
}
