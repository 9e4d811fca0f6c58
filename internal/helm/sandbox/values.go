package sandbox

import (
	"encoding/json"
	"fmt"
	"reflect"

	"helm.sh/helm/v4/pkg/chart/common"
)

// value is a value tree (Helm values, a looked-up object) as it crosses to
// the worker with its Go types: JSON alone would turn every integer into a
// float64, and a template prints 1000000 as "1000000" from an int64 but as
// "1e+06" from a float64. The worker must render what Helm renders in the
// operator, byte for byte.
type value struct {
	// Kind is the Go type: "nil", "bool", "string", "float64", "float32",
	// an integer type's name, "map" (map[string]any), "values"
	// (common.Values), "list" ([]any), or "json" for any other type (sent
	// as its JSON, decoded as JSON decodes).
	Kind string            `json:"k"`
	Bool bool              `json:"b,omitempty"`
	Str  string            `json:"s,omitempty"`
	Num  json.RawMessage   `json:"n,omitempty"`
	Map  map[string]*value `json:"m,omitempty"`
	List []*value          `json:"l,omitempty"`
}

// encodeValue is v as a value tree.
func encodeValue(v any) (*value, error) {
	switch t := v.(type) {
	case nil:
		return &value{Kind: "nil"}, nil
	case bool:
		return &value{Kind: "bool", Bool: t}, nil
	case string:
		return &value{Kind: "string", Str: t}, nil
	case map[string]any:
		return encodeMap("map", t)
	case common.Values:
		return encodeMap("values", t)
	case []any:
		out := &value{Kind: "list", List: make([]*value, 0, len(t))}
		for _, e := range t {
			ev, err := encodeValue(e)
			if err != nil {
				return nil, err
			}
			out.List = append(out.List, ev)
		}
		return out, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if rv.Type().PkgPath() == "" { // a builtin type, not a named one
			n, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			return &value{Kind: rv.Kind().String(), Num: n}, nil
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding a value of type %T: %w", v, err)
	}
	return &value{Kind: "json", Num: raw}, nil
}

func encodeMap(kind string, m map[string]any) (*value, error) {
	out := &value{Kind: kind, Map: make(map[string]*value, len(m))}
	for k, e := range m {
		ev, err := encodeValue(e)
		if err != nil {
			return nil, err
		}
		out.Map[k] = ev
	}
	return out, nil
}

// decodeValue is the Go value v encodes.
func decodeValue(v *value) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch v.Kind {
	case "nil":
		return nil, nil
	case "bool":
		return v.Bool, nil
	case "string":
		return v.Str, nil
	case "map", "values":
		m := make(map[string]any, len(v.Map))
		for k, e := range v.Map {
			d, err := decodeValue(e)
			if err != nil {
				return nil, err
			}
			m[k] = d
		}
		if v.Kind == "values" {
			return common.Values(m), nil
		}
		return m, nil
	case "list":
		l := make([]any, 0, len(v.List))
		for _, e := range v.List {
			d, err := decodeValue(e)
			if err != nil {
				return nil, err
			}
			l = append(l, d)
		}
		return l, nil
	case "json":
		var out any
		err := json.Unmarshal(v.Num, &out)
		return out, err
	}
	t, ok := numberTypes[v.Kind]
	if !ok {
		return nil, fmt.Errorf("a value of unknown kind %q", v.Kind)
	}
	p := reflect.New(t)
	if err := json.Unmarshal(v.Num, p.Interface()); err != nil {
		return nil, err
	}
	return p.Elem().Interface(), nil
}

// numberTypes are the builtin number types by reflect kind name. A
// variable, not an init: the worker runs from this package's init.
var numberTypes = func() map[string]reflect.Type {
	types := map[string]reflect.Type{}
	for _, v := range []any{int(0), int8(0), int16(0), int32(0), int64(0), uint(0), uint8(0), uint16(0), uint32(0), uint64(0), float32(0), float64(0)} {
		types[reflect.TypeOf(v).Kind().String()] = reflect.TypeOf(v)
	}
	return types
}()

// encodeMapValue and decodeMapValue are encodeValue and decodeValue of a
// map, nil kept nil.
func encodeMapValue(m map[string]any) (*value, error) {
	if m == nil {
		return nil, nil
	}
	return encodeMap("map", m)
}

func decodeMapValue(v *value) (map[string]any, error) {
	d, err := decodeValue(v)
	if err != nil || d == nil {
		return nil, err
	}
	switch m := d.(type) {
	case map[string]any:
		return m, nil
	case common.Values:
		return m, nil
	}
	return nil, fmt.Errorf("a value of kind %q where a map was expected", v.Kind)
}
