package manifest

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestLabelOwner(t *testing.T) {
	tests := []struct {
		name       string
		labels     map[string]string
		layer      string
		wantLabels map[string]string
		wantErr    string
	}{
		{name: "no labels", layer: "apps",
			wantLabels: map[string]string{"kraan.io/layer": "apps", "kraan/layer": "apps"}},
		{name: "keeps other labels", labels: map[string]string{"app": "podinfo"}, layer: "base",
			wantLabels: map[string]string{"app": "podinfo", "kraan.io/layer": "base", "kraan/layer": "base"}},
		{name: "replaces the previous owner", labels: map[string]string{"kraan/layer": "old", "kraan.io/layer": "old"},
			layer: "new", wantLabels: map[string]string{"kraan.io/layer": "new", "kraan/layer": "new"}},
		{name: "name too long for a label", layer: strings.Repeat("a", 64), wantErr: "cannot be used as the value of label kraan.io/layer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := obj("v1", "ConfigMap", "default", "x")
			o.SetLabels(tt.labels)
			err := LabelOwner(o, tt.layer)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(o.GetLabels()).To(Equal(tt.labels), "untouched on error")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(o.GetLabels()).To(Equal(tt.wantLabels))
		})
	}
}

func TestInjectVersion(t *testing.T) {
	hr := func(annotation, values string) string {
		doc := "apiVersion: kraan.io/v1alpha1\nkind: HelmRelease\nmetadata:\n  name: test\n  namespace: apps\n"
		if annotation != "" {
			doc += "  annotations:\n    kraan.updateVersion: \"" + annotation + "\"\n"
		}
		return doc + "spec:\n  chartRef: {kind: OCIRepository, name: c}\n" + values
	}
	tests := []struct {
		name       string
		doc        string
		wantValues any // nil: spec.values absent
		wantErr    string
	}{
		{name: "annotated, no values", doc: hr("true", ""), wantValues: map[string]any{"kraanVersion": "0.2.0"}},
		{name: "annotated, values kept", doc: hr("true", "  values:\n    replicas: 2\n    kraanVersion: 0.1.0\n"),
			wantValues: map[string]any{"replicas": int64(2), "kraanVersion": "0.2.0"}},
		{name: "not annotated", doc: hr("", ""), wantValues: nil},
		{name: "annotation false", doc: hr("false", "  values: {a: b}\n"), wantValues: map[string]any{"a": "b"}},
		{name: "annotation on another kind",
			doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations: {kraan.updateVersion: \"true\"}\n"},
		{name: "values not a mapping", doc: hr("true", "  values: [1, 2]\n"),
			wantErr: "HelmRelease apps/test: setting spec.values.kraanVersion for annotation kraan.updateVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := object(t, tt.doc)
			err := InjectVersion(o, "0.2.0")
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			values, found := unstructuredValues(o.Object)
			if tt.wantValues == nil {
				g.Expect(found).To(BeFalse())
				return
			}
			g.Expect(values).To(Equal(tt.wantValues))
		})
	}
}

func unstructuredValues(m map[string]any) (any, bool) {
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok := spec["values"]
	return v, ok
}

func TestSetShard(t *testing.T) {
	tests := []struct {
		name             string
		apiVersion, kind string
		labels           map[string]string
		shard            string
		wantLabels       map[string]string
	}{
		{name: "a release takes the layer's shard", apiVersion: "kraan.io/v1alpha1", kind: "HelmRelease",
			labels: map[string]string{"app": "x"}, shard: "a", wantLabels: map[string]string{"app": "x", ShardLabel: "a"}},
		{name: "the layer's shard wins over the source's", apiVersion: "kraan.io/v1alpha1", kind: "HelmRelease",
			labels: map[string]string{ShardLabel: "b"}, shard: "a", wantLabels: map[string]string{ShardLabel: "a"}},
		{name: "a layer without a shard takes it away", apiVersion: "kraan.io/v1alpha1", kind: "HelmRelease",
			labels: map[string]string{ShardLabel: "b", "app": "x"}, wantLabels: map[string]string{"app": "x"}},
		{name: "other kinds are left alone", apiVersion: "v1", kind: "ConfigMap",
			labels: map[string]string{ShardLabel: "b"}, shard: "a", wantLabels: map[string]string{ShardLabel: "b"}},
		{name: "a HelmRelease of another group too", apiVersion: "example.com/v1", kind: "HelmRelease",
			shard: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := obj(tt.apiVersion, tt.kind, "default", "x")
			o.SetLabels(tt.labels)
			SetShard(o, tt.shard)
			NewWithT(t).Expect(o.GetLabels()).To(Equal(tt.wantLabels))
		})
	}
}
