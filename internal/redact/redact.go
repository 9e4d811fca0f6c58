// Package redact keeps secret values out of what the operator emits. A
// Redactor is given the values a reconcile handled that came from Secrets (a
// layer's Secret objects, valuesFrom Secrets) and replaces every occurrence of
// them, plain or base64-encoded, in a text or an error before it reaches a
// condition, an event, a log line or a metric. Errors from the API server,
// kustomize and Helm quote object content freely ("expected string, got
// &value.valueUnstructured{Value:…}"), so the only safe place to stop a
// value is at the edge, by what it is rather than by where it came from.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Mask replaces a secret value.
const Mask = "*****"

// MinLength is the shortest value redacted: shorter ones ("1", "on") would
// mask ordinary words of every message while protecting nothing a guess
// would not find.
const MinLength = 4

// Redactor replaces known secret values. The zero value redacts nothing; a
// nil *Redactor is valid too.
type Redactor struct {
	values []string
	sorted bool
}

// Add records values to redact, with their base64 encodings.
func (r *Redactor) Add(values ...string) {
	for _, v := range values {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			if len(form) >= MinLength { // duplicates go when sorted (String)
				r.values = append(r.values, form)
				r.sorted = false
			}
		}
	}
}

// maxDepth bounds how deep a value is searched for the values inside it
// (a map in a list in a base64 string of a JSON document…): deeper parts are
// covered by the value that holds them, and a hostile value cannot make the
// search run long.
const maxDepth = 8

// AddSecretData records the values of a Secret's data, and every value
// inside each (see AddValue): an error may quote one of them alone.
func (r *Redactor) AddSecretData(data map[string][]byte) {
	for _, v := range data {
		r.addString(string(v), 0)
	}
}

// AddValue records v, whatever its shape, and every value inside it: the
// leaves of a map or a list, the scalars of a string that is a JSON or YAML
// document, the text a base64 string decodes to, each line of a multi-line
// string, and the forms Go and JSON print a map, a list or a number in, since
// an error quotes a value in any of them ("expected string, got
// map[string]interface {}{…}"). Keys are not recorded: they name data, and
// must stay readable in a message.
func (r *Redactor) AddValue(v any) {
	r.addTree(v, 0)
}

// AddObjects records every value in the data and stringData of every Secret
// among objs, in whatever shape it was written (see AddValue): the API server
// refuses a malformed value, and quotes it back.
func (r *Redactor) AddObjects(objs []*unstructured.Unstructured) {
	for _, obj := range objs {
		if !IsSecret(obj) {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			if v, ok := obj.Object[field]; ok {
				r.addTree(v, 0)
			}
		}
	}
}

// IsSecret says whether obj is a Secret: kind Secret of any group and
// version, so a malformed apiVersion does not turn a Secret's values into
// ordinary text.
func IsSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetKind() == "Secret"
}

// addTree records a value of any shape and the values inside it.
func (r *Redactor) addTree(v any, depth int) {
	if depth > maxDepth {
		return
	}
	switch t := v.(type) {
	case nil, bool:
	case string:
		r.addString(t, depth)
	case []byte:
		r.addString(string(t), depth)
	case map[string]any:
		for _, c := range t {
			r.addTree(c, depth+1)
		}
		r.addPrinted(t)
	case []any:
		for _, c := range t {
			r.addTree(c, depth+1)
		}
		r.addPrinted(t)
	case float64:
		r.Add(strconv.FormatFloat(t, 'f', -1, 64), strconv.FormatFloat(t, 'g', -1, 64), fmt.Sprint(t))
	default: // int64, json.Number and other scalars
		r.Add(fmt.Sprint(t))
	}
}

// addPrinted records the forms a composite value is printed in by JSON, by
// Go's %v and by Go's %#v (the API server's "got map[string]interface {}{…}").
func (r *Redactor) addPrinted(v any) {
	if b, err := json.Marshal(v); err == nil {
		r.Add(string(b))
	}
	r.Add(fmt.Sprint(v), fmt.Sprintf("%#v", v))
}

// addString records s and the values inside it: the scalars of the JSON or
// YAML document it is, or else its lines, and what it decodes to as base64.
func (r *Redactor) addString(s string, depth int) {
	r.Add(s, escaped(strconv.Quote(s)), escaped(jsonString(s)))
	if depth > maxDepth {
		return
	}
	if tree, ok := document(s); ok {
		// Its scalars, not its lines: a line holds a key ("nodeSelector:"),
		// which names data and must stay readable in a message.
		r.addTree(tree, depth+1)
	} else if strings.Contains(s, "\n") {
		for line := range strings.SplitSeq(s, "\n") { // a PEM key: an error may quote one line
			r.Add(strings.TrimSpace(line))
		}
	}
	if decoded, ok := decodeBase64(s); ok {
		r.addString(decoded, depth+1)
	}
}

// escaped strips the quotes of a quoted string: a value with quotes,
// backslashes or newlines is quoted escaped ("a\nb"), not as written.
func escaped(quoted string) string {
	if len(quoted) < 2 {
		return ""
	}
	return quoted[1 : len(quoted)-1]
}

// jsonString is s as JSON writes it, quoted.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// document parses s as a JSON or YAML mapping or list.
func document(s string) (any, bool) {
	var tree any
	if yaml.Unmarshal([]byte(s), &tree) != nil {
		return nil, false
	}
	switch tree.(type) {
	case map[string]any, []any:
		return tree, true
	}
	return nil, false
}

// decodeBase64 decodes s when it is base64 (standard or URL alphabet, padded
// or not) of printable text; binary results are ignored, as nothing prints
// them.
func decodeBase64(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < MinLength {
		return "", false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil && printable(b) {
			return string(b), true
		}
	}
	return "", false
}

// printable says whether b is UTF-8 text without control characters other
// than whitespace.
func printable(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	for _, c := range string(b) {
		if unicode.IsControl(c) && !unicode.IsSpace(c) {
			return false
		}
	}
	return true
}

// String returns s with every recorded value masked, longest first, so a
// value containing another is masked whole.
func (r *Redactor) String(s string) string {
	if r == nil || len(r.values) == 0 {
		return s
	}
	if !r.sorted {
		// A copy: a Redactor copied by value shares the array, and sorting
		// it in place would reorder the other's values under it.
		values := slices.Clone(r.values)
		slices.SortFunc(values, func(a, b string) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return strings.Compare(a, b)
		})
		r.values, r.sorted = slices.Compact(values), true
	}
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, Mask)
	}
	return s
}

// Error returns err with its message redacted; errors.Is and errors.As still
// see the original chain (for classification), but its text is never the
// one printed.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil || len(r.values) == 0 {
		return err
	}
	msg := err.Error()
	redacted := r.String(msg)
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
