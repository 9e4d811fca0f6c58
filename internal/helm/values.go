package helm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	valuesutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/strvals"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// ValuesSource is one spec.valuesFrom entry with the data the controller read
// for it; Data is nil when the ConfigMap or Secret does not exist.
type ValuesSource struct {
	Ref  kraanv1.ValuesReference
	Data map[string][]byte
}

// ValuesError says which valuesFrom entry is wrong and why; it is the user's
// to fix, so the controller reports it instead of retrying blindly.
type ValuesError struct {
	Ref kraanv1.ValuesReference
	Err error
}

func (e *ValuesError) Error() string {
	return fmt.Sprintf("values from %s %s key %s: %v", e.Ref.Kind, e.Ref.Name, valuesKey(e.Ref), e.Err)
}

func (e *ValuesError) Unwrap() error { return e.Err }

// ComposeValues merges values as Flux does: each valuesFrom entry in order
// (a whole YAML document, or with targetPath the key's raw content at that
// path), then the inline values on top.
func ComposeValues(sources []ValuesSource, inline *apiextensionsv1.JSON) (map[string]any, error) {
	result := map[string]any{}
	for _, src := range sources {
		data, ok := src.Data[valuesKey(src.Ref)]
		switch {
		case !ok && src.Ref.Optional:
			continue
		case src.Data == nil:
			return nil, &ValuesError{Ref: src.Ref, Err: fmt.Errorf("%s not found", src.Ref.Kind)}
		case !ok:
			return nil, &ValuesError{Ref: src.Ref, Err: fmt.Errorf("key not found")}
		}
		if src.Ref.TargetPath != "" {
			if err := setAtPath(result, src.Ref.TargetPath, string(data), src.Ref.Literal); err != nil {
				return nil, &ValuesError{Ref: src.Ref, Err: err}
			}
			continue
		}
		values, err := common.ReadValues(data)
		if err != nil {
			return nil, &ValuesError{Ref: src.Ref, Err: fmt.Errorf("invalid YAML: %w", err)}
		}
		result = valuesutil.MergeTables(values, result)
	}
	if inline == nil || len(inline.Raw) == 0 {
		return result, nil
	}
	values := map[string]any{}
	if err := json.Unmarshal(inline.Raw, &values); err != nil {
		return nil, fmt.Errorf("spec.values: %w", err)
	}
	return valuesutil.MergeTables(values, result), nil
}

// targetPathPlaceholder stands for the value while Helm's `--set` parser
// builds the path: the value itself never goes through the parser, which
// would read commas, backslashes and braces as syntax and replace bytes that
// are not UTF-8.
const targetPathPlaceholder = "kraanTargetPathValue0x7f3c9e51"

// setAtPath sets value at path (Helm's `--set` key syntax: a.b, a[0], a\.b)
// with Flux's meaning (see targetPathValue), except that the value is never
// read as `--set` syntax: Flux hands it to Helm's parser, which splits a
// password at its commas, lets `,key=value` inside a Secret set other keys,
// and replaces bytes that are not UTF-8. Only the path is parsed, with a
// placeholder for the value, so an error never quotes the value, which may
// be a secret. literal (valuesFrom[].literal, Helm's --set-literal) sets the
// value as a string, quotes and all.
func setAtPath(values map[string]any, path, value string, literal bool) error {
	// Helm 4's parser takes some malformed paths ("a[") without an error
	// and sets nothing: the value would be dropped silently.
	alone := map[string]any{}
	if err := strvals.ParseIntoString(path+"="+targetPathPlaceholder, alone); err != nil {
		return fmt.Errorf("invalid targetPath %q: %w", path, err)
	}
	if !holdsPlaceholder(alone) {
		return fmt.Errorf("invalid targetPath %q: it names no key", path)
	}
	if err := strvals.ParseIntoString(path+"="+targetPathPlaceholder, values); err != nil {
		return fmt.Errorf("invalid targetPath %q: %w", path, err)
	}
	if literal {
		replacePlaceholder(values, value)
	} else {
		replacePlaceholder(values, targetPathValue(value))
	}
	return nil
}

// plainScalar is a value made only of characters that mean nothing to the
// `--set` parser: the only values it gives a type other than string.
var plainScalar = regexp.MustCompile(`^[-+0-9A-Za-z._]*$`)

// targetPathValue is what Flux sets at a targetPath for value: in single or
// double quotes, the string between them; otherwise the type Helm's `--set`
// infers (true, false, null, integers) or else the string itself, byte for
// byte.
func targetPathValue(value string) any {
	quoted := func(q string) bool { return strings.HasPrefix(value, q) && strings.HasSuffix(value, q) }
	if quoted("'") || quoted(`"`) {
		return strings.Trim(value, `'"`)
	}
	if plainScalar.MatchString(value) {
		typed := map[string]any{}
		if err := strvals.ParseInto("v="+value, typed); err == nil {
			return typed["v"]
		}
	}
	return value
}

// holdsPlaceholder says whether setAtPath's placeholder is somewhere in node.
func holdsPlaceholder(node any) bool {
	switch n := node.(type) {
	case map[string]any:
		for _, v := range n {
			if v == targetPathPlaceholder || holdsPlaceholder(v) {
				return true
			}
		}
	case []any:
		for _, v := range n {
			if v == targetPathPlaceholder || holdsPlaceholder(v) {
				return true
			}
		}
	}
	return false
}

// replacePlaceholder puts value where setAtPath's placeholder is.
func replacePlaceholder(node any, value any) {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if v == targetPathPlaceholder {
				n[k] = value
				continue
			}
			replacePlaceholder(v, value)
		}
	case []any:
		for i, v := range n {
			if v == targetPathPlaceholder {
				n[i] = value
				continue
			}
			replacePlaceholder(v, value)
		}
	}
}

func valuesKey(ref kraanv1.ValuesReference) string {
	if ref.ValuesKey == "" {
		return "values.yaml"
	}
	return ref.ValuesKey
}

// InvalidValuesError is returned when values do not satisfy the chart's
// values.schema.json (or a subchart's): a mistake in the spec, not a failed
// release.
type InvalidValuesError struct {
	Chart string
	Err   error
}

func (e *InvalidValuesError) Error() string {
	return fmt.Sprintf("values do not match the schema of chart %s: %v", e.Chart, e.Err)
}

func (e *InvalidValuesError) Unwrap() error { return e.Err }

// ValidateValues checks values, coalesced with the chart's defaults as Helm
// renders them, against the schemas of the chart and its subcharts, before any
// action: Helm would fail the install or upgrade the same way, and count it.
func ValidateValues(c *Chart, values map[string]any) error {
	if c == nil {
		return nil
	}
	coalesced, err := valuesutil.CoalesceValues(c, values)
	if err != nil {
		return &InvalidValuesError{Chart: c.Name(), Err: err}
	}
	if err := valuesutil.ValidateAgainstSchema(c, coalesced); err != nil {
		return &InvalidValuesError{Chart: c.Name(), Err: err}
	}
	return nil
}
