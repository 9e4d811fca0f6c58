package redact

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkRedactor_AddObjects records a layer of 50 Secrets of 10 values
// each (strings, a values document, a map) and masks a message: the cost a
// layer with Secrets pays on each reconcile.
func BenchmarkRedactor_AddObjects(b *testing.B) {
	objs := make([]*unstructured.Unstructured, 0, 50)
	for i := range 50 {
		data := map[string]any{}
		for k := range 8 {
			data[fmt.Sprintf("key-%d", k)] = fmt.Sprintf("value-%d-%d-0123456789abcdef", i, k)
		}
		data["values.yaml"] = fmt.Sprintf("db:\n  password: pw-%d-0123456789\n  hosts: [a.example, b.example]\n", i)
		data["map"] = map[string]any{"password": fmt.Sprintf("map-%d-0123456789", i)}
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "stringData": data,
		}})
	}
	msg := "applying: Secret/x/y dry-run failed: .stringData.password: expected string, got map-7-0123456789"
	b.ReportAllocs()
	for b.Loop() {
		r := &Redactor{}
		r.AddObjects(objs)
		_ = r.String(msg)
	}
}
