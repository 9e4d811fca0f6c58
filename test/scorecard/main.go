// Command kraan-scorecard holds kraan-operator's own scorecard tests. Like
// operator-sdk's scorecard-test it takes the test name as its argument, reads
// the bundle (from /bundle in the scorecard pod, or --bundle) and prints a
// scorecard v1alpha3 TestStatus as JSON; the state says pass or fail.
//
// Tests:
//
//	alm-examples-valid  every alm-example is valid against its CRD's OpenAPI
//	                    schema, so a user copying one from OperatorHub gets an
//	                    object the API server accepts.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// podBundleRoot is where the scorecard pod mounts the bundle.
const podBundleRoot = "/bundle"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kraan-scorecard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bundle := fs.String("bundle", podBundleRoot, "Directory of the bundle (manifests/, metadata/).")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: kraan-scorecard [--bundle DIR] alm-examples-valid")
		return 2
	}
	var result scapiv1alpha3.TestResult
	switch fs.Arg(0) {
	case "alm-examples-valid":
		result = almExamplesValid(*bundle)
	default:
		fmt.Fprintf(stderr, "unknown test %q\n", fs.Arg(0))
		return 2
	}
	status := scapiv1alpha3.TestStatus{Results: []scapiv1alpha3.TestResult{result}}
	out, err := json.MarshalIndent(status, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	_, _ = fmt.Fprintln(stdout, string(out))
	return 0
}

// almExamplesValid validates each alm-example against the schema of its
// CRD's version in the bundle.
func almExamplesValid(bundle string) scapiv1alpha3.TestResult {
	result := scapiv1alpha3.TestResult{Name: "alm-examples-valid", State: scapiv1alpha3.PassState}
	examples, crds, err := readBundle(filepath.Join(bundle, "manifests"))
	if err != nil {
		result.State, result.Errors = scapiv1alpha3.ErrorState, []string{err.Error()}
		return result
	}
	if len(examples) == 0 {
		result.State, result.Errors = scapiv1alpha3.FailState, []string{"the CSV has no alm-examples"}
		return result
	}
	var logs []string
	for _, ex := range examples {
		errs := validateExample(ex, crds)
		name := fmt.Sprintf("%s %s", ex.GetKind(), ex.GetName())
		for _, e := range errs {
			result.Errors = append(result.Errors, fmt.Sprintf("%s: %s", name, e))
		}
		if len(errs) == 0 {
			logs = append(logs, name+": valid")
		}
	}
	result.Log = strings.Join(logs, "\n")
	if len(result.Errors) > 0 {
		result.State = scapiv1alpha3.FailState
	}
	return result
}

func validateExample(ex unstructured.Unstructured, crds []apiextensionsv1.CustomResourceDefinition) []string {
	gvk := ex.GroupVersionKind()
	for i := range crds {
		crd := &crds[i]
		if crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != gvk.Version {
				continue
			}
			if v.Schema == nil {
				return []string{"the CRD version has no schema"}
			}
			internal := &apiextensions.CustomResourceValidation{}
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
				return []string{err.Error()}
			}
			validator, _, err := validation.NewSchemaValidator(internal.OpenAPIV3Schema)
			if err != nil {
				return []string{err.Error()}
			}
			var out []string
			for _, e := range validation.ValidateCustomResource(field.NewPath(""), ex.Object, validator) {
				out = append(out, e.Error())
			}
			return out
		}
	}
	return []string{fmt.Sprintf("no CRD in the bundle serves %s", gvk)}
}

// readBundle returns the CSV's alm-examples and the bundle's CRDs.
func readBundle(dir string) ([]unstructured.Unstructured, []apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var examples []unstructured.Unstructured
	var crds []apiextensionsv1.CustomResourceDefinition
	foundCSV := false
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		obj := unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		switch obj.GetKind() {
		case "ClusterServiceVersion":
			foundCSV = true
			if raw := obj.GetAnnotations()["alm-examples"]; raw != "" {
				var list []map[string]any
				if err := json.Unmarshal([]byte(raw), &list); err != nil {
					return nil, nil, fmt.Errorf("alm-examples: %w", err)
				}
				for _, o := range list {
					examples = append(examples, unstructured.Unstructured{Object: o})
				}
			}
		case "CustomResourceDefinition":
			crd := apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(data, &crd); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			crds = append(crds, crd)
		}
	}
	if !foundCSV {
		return nil, nil, errors.New("no ClusterServiceVersion in " + dir)
	}
	return examples, crds, nil
}
