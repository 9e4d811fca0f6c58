package sandbox

import (
	"encoding/json"
	"fmt"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// request is what the parent sends the worker on stdin.
type request struct {
	Chart        *wireChart            `json:"chart"`
	Values       *value                `json:"values"`
	Release      common.ReleaseOptions `json:"release"`
	Capabilities *common.Capabilities  `json:"capabilities"`
	// MaxOutput bounds the rendered files.
	MaxOutput int64 `json:"maxOutput"`
}

// response is what the worker writes on stdout.
type response struct {
	Files map[string]string `json:"files,omitempty"`
	// Err is the render's error; TooLarge says it is the output bound.
	Err      string `json:"err,omitempty"`
	TooLarge int64  `json:"tooLarge,omitempty"`
}

// lookupRequest and lookupResponse are a template's lookup, from the worker
// to the parent (fd 3) and back (fd 4), one JSON line each.
type lookupRequest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

type lookupResponse struct {
	Object *value `json:"object,omitempty"`
	Err    string `json:"err,omitempty"`
}

// wireChart is a chart with its dependencies, which chart.Chart's JSON
// leaves out.
type wireChart struct {
	Chart *chart.Chart `json:"chart"`
	// Values are the chart's, with their types (see value); Chart's are
	// left out.
	Values       *value       `json:"values,omitempty"`
	Dependencies []*wireChart `json:"dependencies,omitempty"`
}

func toWire(c *chart.Chart) (*wireChart, error) {
	values, err := encodeMapValue(c.Values)
	if err != nil {
		return nil, err
	}
	shallow := *c
	shallow.Values = nil
	w := &wireChart{Chart: &shallow, Values: values}
	for _, d := range c.Dependencies() {
		dw, err := toWire(d)
		if err != nil {
			return nil, err
		}
		w.Dependencies = append(w.Dependencies, dw)
	}
	return w, nil
}

func (w *wireChart) chart() (*chart.Chart, error) {
	if w == nil || w.Chart == nil {
		return nil, fmt.Errorf("no chart")
	}
	c := w.Chart
	values, err := decodeMapValue(w.Values)
	if err != nil {
		return nil, err
	}
	c.Values = values
	deps := make([]*chart.Chart, 0, len(w.Dependencies))
	for _, d := range w.Dependencies {
		dc, err := d.chart()
		if err != nil {
			return nil, err
		}
		deps = append(deps, dc)
	}
	c.SetDependencies(deps...)
	return c, nil
}

// encodeLine writes v as one JSON line.
func encodeLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
