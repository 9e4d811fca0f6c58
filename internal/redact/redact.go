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
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

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
			if len(form) >= MinLength && !slices.Contains(r.values, form) {
				r.values = append(r.values, form)
				r.sorted = false
			}
		}
	}
}

// addParts records the parts of a value an error may quote alone: the
// scalars of a YAML document (a values.yaml in a Secret) — its keys are not
// secret and stay readable — or else each line of a multi-line value (a PEM
// key).
func (r *Redactor) addParts(v []byte) {
	if r.addScalars(v) {
		return
	}
	if !bytes.Contains(v, []byte("\n")) {
		return
	}
	for line := range strings.SplitSeq(string(v), "\n") {
		r.Add(strings.TrimSpace(line))
	}
}

// AddSecretData records the values of a Secret's data; a value that is a
// YAML document (a values.yaml in a Secret) also has each of its scalars
// recorded, since an error may quote one of them alone.
func (r *Redactor) AddSecretData(data map[string][]byte) {
	for _, v := range data {
		r.Add(string(v))
		r.addParts(v)
	}
}

// AddObjects records the data and stringData values of every Secret among objs.
func (r *Redactor) AddObjects(objs []*unstructured.Unstructured) {
	for _, obj := range objs {
		if obj.GetKind() != "Secret" || obj.GroupVersionKind().Group != "" {
			continue
		}
		if data, ok := obj.Object["data"].(map[string]any); ok {
			for _, v := range data {
				s := fmt.Sprint(v)
				r.Add(s) // as written: base64
				if decoded, err := base64.StdEncoding.DecodeString(s); err == nil {
					r.Add(string(decoded))
					r.addParts(decoded)
				}
			}
		}
		if data, ok := obj.Object["stringData"].(map[string]any); ok {
			for _, v := range data {
				r.Add(fmt.Sprint(v))
				r.addParts([]byte(fmt.Sprint(v)))
			}
		}
	}
}

// addScalars records the scalar leaves of a YAML mapping or list, and
// reports whether doc is one.
func (r *Redactor) addScalars(doc []byte) bool {
	var tree any
	if yaml.Unmarshal(doc, &tree) != nil {
		return false
	}
	switch tree.(type) {
	case map[string]any, []any:
	default:
		return false
	}
	var walk func(any)
	walk = func(n any) {
		switch v := n.(type) {
		case map[string]any:
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		case nil, bool:
		default:
			r.Add(fmt.Sprint(v))
		}
	}
	walk(tree)
	return true
}

// String returns s with every recorded value masked, longest first, so a
// value containing another is masked whole.
func (r *Redactor) String(s string) string {
	if r == nil || len(r.values) == 0 {
		return s
	}
	if !r.sorted {
		slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
		r.sorted = true
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
