package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/template"

	"helm.sh/helm/v4/pkg/chart/common/util"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// workerEnv, set to "1", makes any binary linking this package a render
// worker: the operator, and the test binaries that run the engine in
// process, which thus test the same path.
const workerEnv = "KRAAN_RENDER_WORKER"

func init() {
	if os.Getenv(workerEnv) != "1" {
		return
	}
	lookupOut, lookupIn := os.NewFile(3, "lookup-requests"), os.NewFile(4, "lookup-answers")
	os.Exit(runWorker(os.Stdin, os.Stdout, lookupOut, lookupIn))
}

// runWorker renders the request read from in and writes the response to
// out; a template's lookup goes out on lookupOut and is answered on
// lookupIn.
func runWorker(in io.Reader, out io.Writer, lookupOut io.Writer, lookupIn io.Reader) int {
	req := request{}
	var resp response
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		resp.Err = fmt.Sprintf("reading the render request: %v", err)
	} else {
		answers := bufio.NewReader(lookupIn)
		resp = render(req, func(apiVersion, kind, namespace, name string) (map[string]any, error) {
			return askLookup(lookupOut, answers, lookupRequest{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name})
		})
	}
	if err := json.NewEncoder(out).Encode(resp); err != nil {
		return 1
	}
	return 0
}

// render renders req's chart as Helm's install or upgrade does before it
// applies anything: dependencies enabled by the values, the values
// coalesced with .Release and .Capabilities, then every template. The
// schema is not checked here: Helm's action checks it on the same values.
func render(req request, lookup func(apiVersion, kind, namespace, name string) (map[string]any, error)) response {
	c, err := req.Chart.chart()
	if err != nil {
		return response{Err: err.Error()}
	}
	vals, err := decodeMapValue(req.Values)
	if err != nil {
		return response{Err: err.Error()}
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return response{Err: err.Error()}
	}
	values, err := util.ToRenderValuesWithSchemaValidation(c, vals, req.Release, req.Capabilities, true)
	if err != nil {
		return response{Err: err.Error()}
	}
	e := engine.Engine{CustomTemplateFuncs: template.FuncMap{"lookup": lookup}}
	files, err := e.RenderWithContext(context.Background(), c, values)
	if err != nil {
		return response{Err: err.Error()}
	}
	var size int64
	for _, f := range files {
		size += int64(len(f))
	}
	if req.MaxOutput > 0 && size > req.MaxOutput {
		return response{TooLarge: size}
	}
	return response{Files: files}
}

// askLookup sends a lookup to the parent and reads its answer.
func askLookup(out io.Writer, answers *bufio.Reader, req lookupRequest) (map[string]any, error) {
	line, err := encodeLine(req)
	if err != nil {
		return nil, err
	}
	if _, err := out.Write(line); err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	answer, err := answers.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	resp := lookupResponse{}
	if err := json.Unmarshal(answer, &resp); err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	if resp.Err != "" {
		return nil, errors.New(resp.Err)
	}
	obj, err := decodeMapValue(resp.Object)
	if err != nil || obj == nil {
		return map[string]any{}, err
	}
	return obj, nil
}
