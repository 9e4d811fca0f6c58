package manifest

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

const (
	// LayerTestAnnotation set to "true" marks an object as one of its layer's
	// tests (Kraan's "layer integration test job"): typically a Job, a Pod or a
	// HelmRelease whose chart runs a test. A test is applied only once every
	// other object of the layer is ready, runs again for every new layer version
	// or source revision, and must succeed before the layer is Deployed.
	LayerTestAnnotation = "kraan.io/layer-test"
	// LayerTestRunAnnotation records, on a test object, the run it belongs to:
	// "<layer version>@<source revision>". A test object carrying another run is
	// deleted and created again, which is how a test re-runs.
	LayerTestRunAnnotation = "kraan.io/layer-test-run"
)

// IsLayerTest reports whether obj is marked as its layer's test.
func IsLayerTest(obj *unstructured.Unstructured) bool {
	return obj.GetAnnotations()[LayerTestAnnotation] == "true"
}

// SplitLayerTests separates a layer's tests from its other objects, keeping
// the order of each.
func SplitLayerTests(objs []*unstructured.Unstructured) (objects, tests []*unstructured.Unstructured) {
	for _, obj := range objs {
		if IsLayerTest(obj) {
			tests = append(tests, obj)
		} else {
			objects = append(objects, obj)
		}
	}
	return objects, tests
}

// LayerTestRun names the run of a layer's tests for a layer version and a
// source revision.
func LayerTestRun(version, revision string) string { return version + "@" + revision }

// StampLayerTestRun records run on a test object (see LayerTestRunAnnotation).
func StampLayerTestRun(obj *unstructured.Unstructured, run string) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[LayerTestRunAnnotation] = run
	obj.SetAnnotations(annotations)
}
