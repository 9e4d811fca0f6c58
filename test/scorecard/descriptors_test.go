package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// TestCSV_EveryTopLevelSpecFieldHasADescriptor: OperatorHub's form shows only
// the spec fields the CSV describes, so a field without a specDescriptor is
// hidden from everyone who installs through the console. Every top-level
// field of every owned CRD's stored version must have one.
func TestCSV_EveryTopLevelSpecFieldHasADescriptor(t *testing.T) {
	g := NewWithT(t)
	manifests := filepath.Join("..", "..", "bundle", "manifests")
	data, err := os.ReadFile(filepath.Join(manifests, csvFile))
	g.Expect(err).NotTo(HaveOccurred())
	csv := &v1alpha1.ClusterServiceVersion{}
	g.Expect(yaml.Unmarshal(data, csv)).To(Succeed())

	owned := csv.Spec.CustomResourceDefinitions.Owned
	g.Expect(owned).NotTo(BeEmpty())
	for _, desc := range owned {
		fields := specFieldsOf(g, manifests, desc.Name, desc.Version)
		g.Expect(fields).NotTo(BeEmpty(), "%s has no spec fields in its CRD", desc.Name)
		described := make([]string, 0, len(desc.SpecDescriptors))
		for _, d := range desc.SpecDescriptors {
			described = append(described, d.Path)
		}
		var missing []string
		for _, f := range fields {
			if !slices.Contains(described, f) {
				missing = append(missing, f)
			}
		}
		g.Expect(missing).To(BeEmpty(), "%s: spec fields without a specDescriptor in config/manifests/bases (OperatorHub's form hides them)", desc.Name)
	}
}

// specFieldsOf are the top-level spec properties of version of the CRD
// name, read from the bundle's CRD file.
func specFieldsOf(g Gomega, manifests, name, version string) []string {
	files, err := filepath.Glob(filepath.Join(manifests, "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range files {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if yaml.Unmarshal(data, crd) != nil || crd.Kind != "CustomResourceDefinition" || crd.Name != name {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			return slices.Sorted(maps.Keys(v.Schema.OpenAPIV3Schema.Properties["spec"].Properties))
		}
	}
	g.Expect(name).To(BeEmpty(), "no CRD of version %s in bundle/manifests", version)
	return nil
}
