package redact

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SecretError replaces an error the API server returned about secret, a
// Secret being applied, dry-run or created, by one built from what the
// operator knows to be safe: the Secret's kind, namespace and name, the
// failing field paths that exist in the Secret as written, and a reason
// class from a fixed list ("expected string", "invalid value", "field is
// immutable"). The API server's own text is never kept: it quotes the
// offending value, in whatever shape it was (a map, a list, a number), and
// no pattern can know every shape. The result still answers
// apierrors.IsInvalid, IsConflict, ReasonForError… as the original did (its
// Status carries the reason and code, not the message), so callers classify
// it the same way.
//
// A nil err, an error that is not about a Secret (secret is not one) and an
// error that did not come from the API server (a cancelled context, a
// connection refused: nothing that quotes the request) are returned as they
// are.
func SecretError(secret *unstructured.Unstructured, err error) error {
	var apiStatus apierrors.APIStatus
	if err == nil || !IsSecret(secret) || !errors.As(err, &apiStatus) {
		return err
	}
	var safe *secretError
	if errors.As(err, &safe) {
		return err // already rebuilt
	}
	status := metav1.Status{Status: metav1.StatusFailure, Reason: apierrors.ReasonForError(err), Code: codeOf(err)}
	problems := fieldProblems(secret, err)
	name := describeSecret(secret)
	msg := name + ": " + strings.Join(problems, "; ")
	if len(problems) == 0 {
		msg = fmt.Sprintf("%s: refused by the API server (%s); its message is withheld as it may quote the Secret's data%s",
			name, reasonText(status), hint(status.Reason))
	}
	status.Message = msg
	return &secretError{status: status}
}

// secretError is an API error about a Secret whose text is rebuilt (see
// SecretError). It deliberately does not unwrap to the original: anything
// that walked the chain could print the API server's text.
type secretError struct {
	status metav1.Status
}

// Error implements error.
func (e *secretError) Error() string { return e.status.Message }

// Status implements apierrors.APIStatus, so the error is classified by its
// reason and code like the one it replaces.
func (e *secretError) Status() metav1.Status { return e.status }

func codeOf(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return http.StatusInternalServerError
}

// hint says what to check when no field could be named.
func hint(reason metav1.StatusReason) string {
	switch reason {
	case metav1.StatusReasonForbidden:
		return ": the operator may not write it, or an admission webhook denied it"
	case metav1.StatusReasonConflict:
		return ": another field manager owns its fields"
	case metav1.StatusReasonInvalid, metav1.StatusReasonBadRequest, metav1.StatusReasonInternalError, metav1.StatusReasonUnknown:
		return ": every value of data must be a base64 string and every value of stringData a string"
	}
	return ""
}

func reasonText(s metav1.Status) string {
	if s.Reason == metav1.StatusReasonUnknown {
		return fmt.Sprintf("HTTP %d", s.Code)
	}
	return string(s.Reason)
}

func describeSecret(secret *unstructured.Unstructured) string {
	if ns := secret.GetNamespace(); ns != "" {
		return "Secret " + ns + "/" + secret.GetName()
	}
	return "Secret " + secret.GetName()
}

// fieldProblems lists "<class> at <path>" for every problem of err whose
// field path exists in secret, from the API server's structured causes or,
// for errors that have none (a server-side apply whose value has the wrong
// type), from the paths its message names.
func fieldProblems(secret *unstructured.Unstructured, err error) []string {
	var problems []string
	add := func(p string) {
		if !slices.Contains(problems, p) {
			problems = append(problems, p)
		}
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if path, ok := knownPath(secret, c.Field); ok {
				add(causeClass(c) + " at " + path)
			}
		}
	}
	for _, m := range typeMismatch.FindAllStringSubmatch(err.Error(), -1) {
		if path, ok := knownPath(secret, m[1]); ok && slices.Contains(valueTypes, m[2]) {
			add("invalid value at " + path + ": expected " + m[2])
		}
	}
	return problems
}

// typeMismatch is how structured-merge-diff reports a value of the wrong
// type: ".stringData.password: expected string, got &value.valueUnstructured{…}".
var typeMismatch = regexp.MustCompile(`(\.[^\s:,]+): expected ([a-z]+)`)

// valueTypes are the types typeMismatch may name: anything else in that
// place came from the value, not from the server.
var valueTypes = []string{"string", "map", "list", "numeric", "bool", "boolean", "int", "float", "object", "array"}

// causeClass names the kind of a cause without its message, which quotes
// the value. An immutable field keeps that word: it is what the operator's
// --force handling (kraan.io/force) looks for.
func causeClass(c metav1.StatusCause) string {
	if strings.Contains(c.Message, "immutable") {
		return "field is immutable"
	}
	switch c.Type {
	case metav1.CauseTypeFieldValueRequired:
		return "required value"
	case metav1.CauseTypeFieldValueDuplicate:
		return "duplicate value"
	case metav1.CauseTypeFieldValueNotSupported:
		return "unsupported value"
	case metav1.CauseTypeTooLong:
		return "value too long"
	case metav1.CauseTypeTooMany:
		return "too many values"
	case metav1.CauseTypeForbidden:
		return "forbidden value"
	case metav1.CauseTypeFieldManagerConflict:
		return "conflict with another field manager"
	case metav1.CauseTypeTypeInvalid:
		return "value of the wrong type"
	}
	return "invalid value"
}

// knownPath returns field, as "a.b[c]", when it names a field of secret as
// written: a path taken from an error is then known to be ours, never a
// fragment of a value that looked like one. A key is kept readable; keys
// name data, they are not data.
func knownPath(secret *unstructured.Unstructured, field string) (string, bool) {
	segments := pathSegments(field)
	if len(segments) == 0 {
		return "", false
	}
	if (segments[0] == "data" || segments[0] == "stringData") && len(segments) > 2 {
		// Inside a value: its keys are part of the value.
		segments = segments[:2]
	}
	var node any = secret.Object
	for _, seg := range segments {
		m, ok := node.(map[string]any)
		if !ok {
			return "", false
		}
		if node, ok = m[seg]; !ok {
			return "", false
		}
	}
	out := segments[0]
	for _, seg := range segments[1:] {
		if strings.ContainsAny(seg, ". []") {
			out += "[" + seg + "]"
		} else {
			out += "." + seg
		}
	}
	return out, true
}

// pathSegments splits a field path as the API server writes it (".a.b",
// "a.b", "data[bad key]", "metadata.labels[x.y/z]") into its keys.
func pathSegments(field string) []string {
	var segs []string
	field = strings.TrimPrefix(field, ".")
	for field != "" {
		switch field[0] {
		case '[':
			end := strings.IndexByte(field, ']')
			if end < 0 {
				return nil
			}
			segs = append(segs, strings.Trim(field[1:end], `"`))
			field = strings.TrimPrefix(field[end+1:], ".")
		default:
			end := strings.IndexAny(field, ".[")
			if end < 0 {
				end = len(field)
			}
			segs = append(segs, field[:end])
			field = strings.TrimPrefix(field[end:], ".")
		}
	}
	return segs
}
