// Package api_test proves, against a real kube-apiserver, that the CRDs
// generated from the API types accept the samples and reject invalid objects
// with a message naming the offending field.
package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// samples decodes every document of config/samples except the kustomization.
func samples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		objs = append(objs, decodeAll(t, f)...)
	}
	return objs
}

// decodeDocuments decodes the YAML documents of data, empty ones left out;
// on an error, it returns those before it.
func decodeDocuments(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return objs, err
		}
		if obj.Object != nil {
			objs = append(objs, obj)
		}
	}
}

// expectDryRunAccepted: the API server accepts obj (a dry run), in its namespace,
// created first as an install or a reader would.
func expectDryRunAccepted(g Gomega, obj *unstructured.Unstructured) {
	if ns := obj.GetNamespace(); ns != "" {
		err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		g.Expect(client.IgnoreAlreadyExists(err)).NotTo(HaveOccurred())
	}
	g.Expect(env.Client.Create(context.Background(), obj.DeepCopy(), client.DryRunAll)).To(Succeed())
}

func TestSamples_AreAccepted(t *testing.T) {
	objs := samples(t)
	kinds := map[string]bool{}
	for _, obj := range objs {
		kinds[obj.GetKind()] = true
		t.Run(obj.GetKind()+"/"+obj.GetName(), func(t *testing.T) {
			expectDryRunAccepted(NewWithT(t), obj)
		})
	}
	NewWithT(t).Expect(kinds).To(HaveKey("AddonsLayer"))
	NewWithT(t).Expect(kinds).To(HaveKey("HelmRelease"))
	NewWithT(t).Expect(kinds).To(HaveKey("Habitat"))
	NewWithT(t).Expect(kinds).To(HaveKey("FleetCluster"))
}

func TestDefaults_AreApplied(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	layer := mustDecode(t, validLayer)
	g.Expect(env.Client.Create(ctx, layer, client.DryRunAll)).To(Succeed())
	g.Expect(field(layer, "spec", "source", "kind")).To(Equal("GitRepository"))
	g.Expect(field(layer, "spec", "interval")).To(Equal("1m"))
	g.Expect(field(layer, "spec", "timeout")).To(Equal("1m"))

	hab := mustDecode(t, validHabitat)
	g.Expect(env.Client.Create(ctx, hab, client.DryRunAll)).To(Succeed())
	g.Expect(field(hab, "spec", "service", "topology")).To(Equal("none"))
	g.Expect(field(hab, "spec", "count")).To(Equal(int64(1)))

	hr := mustDecode(t, validRelease)
	g.Expect(env.Client.Create(ctx, hr, client.DryRunAll)).To(Succeed())
	g.Expect(field(hr, "spec", "chart", "spec", "version")).To(Equal("*"))
	g.Expect(field(hr, "spec", "maxHistory")).To(Equal(int64(5)))
}

func TestCRDs_ShareTheKraanCategory(t *testing.T) {
	g := NewWithT(t)
	names := map[string][]string{
		"addonslayers.kraan.io":     {"al", "layer"},
		"helmreleases.kraan.io":     {"khr"},
		"habitats.habitat.kraan.io": {"hab"},
		"fleetclusters.kraan.io":    {"fc"},
	}
	all := testenv.OperatorCRDNames(t)
	g.Expect(names).To(HaveLen(len(all)), "every CRD of the operator is checked: %v", all)
	for name, shortNames := range names {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd)).To(Succeed())
		g.Expect(crd.Spec.Names.Categories).To(ContainElement("kraan"), name)
		g.Expect(crd.Spec.Names.ShortNames).To(ContainElements(shortNames), name)
		g.Expect(crd.Spec.Versions[0].Subresources.Status).NotTo(BeNil(), name)
	}
}

func mustDecode(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("decoding test object: %v", err)
	}
	return obj
}

// field returns the value at the path of fields in obj, nil when absent.
func field(obj *unstructured.Unstructured, fields ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	return v
}
