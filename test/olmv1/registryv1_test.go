// Package olmv1_test checks the bundle against what OLM v1
// (operator-controller, a ClusterExtension) accepts of a registry+v1 bundle,
// since operator-controller itself cannot be built here: the install modes,
// no webhooks, no APIServices, no dependencies, only kinds it can install,
// and CRDs that upgrade safely from the previous bundle of the catalog
// (bundle-history/), as its CRD upgrade-safety preflight checks them.
package olmv1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// supportedKinds are the kinds a registry+v1 bundle may hold besides its
// CSV and CRDs: those OLM installs from a bundle's manifests directory.
var supportedKinds = []string{
	"ClusterServiceVersion", "CustomResourceDefinition", "Secret", "ConfigMap", "ServiceAccount", "Service",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "PrometheusRule", "ServiceMonitor",
	"PodDisruptionBudget", "PriorityClass", "VerticalPodAutoscaler", "ConsoleYAMLSample", "ConsoleQuickStart",
	"ConsoleCLIDownload", "ConsoleLink", "NetworkPolicy",
}

// bundle is one registry+v1 bundle read from disk.
type bundle struct {
	dir  string
	csv  *operatorsv1alpha1.ClusterServiceVersion
	crds map[string]*apiextensionsv1.CustomResourceDefinition
	// kinds are the kinds of manifests/, by file.
	kinds map[string]string
}

func readBundle(t *testing.T, dir string) bundle {
	t.Helper()
	g := NewWithT(t)
	b := bundle{dir: dir, crds: map[string]*apiextensionsv1.CustomResourceDefinition{}, kinds: map[string]string{}}
	files, err := os.ReadDir(filepath.Join(dir, "manifests"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, "manifests", f.Name()))
		g.Expect(err).NotTo(HaveOccurred())
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed(), f.Name())
		b.kinds[f.Name()] = obj.GetKind()
		switch obj.GetKind() {
		case "ClusterServiceVersion":
			b.csv = &operatorsv1alpha1.ClusterServiceVersion{}
			g.Expect(yaml.Unmarshal(data, b.csv)).To(Succeed())
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(yaml.Unmarshal(data, crd)).To(Succeed())
			b.crds[crd.Name] = crd
		}
	}
	g.Expect(b.csv).NotTo(BeNil(), "%s has no ClusterServiceVersion", dir)
	return b
}

func repoDir(t *testing.T, parts ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return filepath.Join(append([]string{root}, parts...)...)
}

// previousBundle is the newest bundle of bundle-history/: the one a
// ClusterExtension upgrades from.
func previousBundle(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir(repoDir(t, "bundle-history"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var versions []string
	for _, e := range entries {
		if e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	NewWithT(t).Expect(versions).NotTo(BeEmpty())
	sort.Strings(versions)
	return repoDir(t, "bundle-history", versions[len(versions)-1])
}

func TestBundle_IsInstallableByOLMv1(t *testing.T) {
	for _, dir := range []string{repoDir(t, "bundle"), previousBundle(t)} {
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			g := NewWithT(t)
			b := readBundle(t, dir)
			for file, kind := range b.kinds {
				g.Expect(supportedKinds).To(ContainElement(kind), "%s: OLM v1 does not install a %s from a registry+v1 bundle", file, kind)
			}
			spec := b.csv.Spec
			allNamespaces := false
			for _, m := range spec.InstallModes {
				if m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces {
					allNamespaces = m.Supported
				}
			}
			g.Expect(allNamespaces).To(BeTrue(), "OLM v1 installs registry+v1 bundles in AllNamespaces mode")
			g.Expect(spec.WebhookDefinitions).To(BeEmpty(), "OLM v1 refuses bundles with webhooks")
			g.Expect(spec.APIServiceDefinitions.Owned).To(BeEmpty(), "OLM v1 refuses bundles with APIServices")
			g.Expect(spec.APIServiceDefinitions.Required).To(BeEmpty(), "OLM v1 resolves no dependencies")
			g.Expect(spec.CustomResourceDefinitions.Required).To(BeEmpty(), "OLM v1 resolves no dependencies")
			_, err := os.Stat(filepath.Join(dir, "metadata", "dependencies.yaml"))
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "OLM v1 resolves no dependencies (metadata/dependencies.yaml)")
			props, err := os.ReadFile(filepath.Join(dir, "metadata", "properties.yaml"))
			if err == nil {
				for _, required := range []string{"olm.package.required", "olm.gvk.required", "olm.constraint"} {
					g.Expect(string(props)).NotTo(ContainSubstring(required), "OLM v1 resolves no dependencies")
				}
			}
			for _, owned := range spec.CustomResourceDefinitions.Owned {
				g.Expect(b.crds).To(HaveKey(owned.Name), "the CSV owns %s, which the bundle does not hold", owned.Name)
			}
		})
	}
}

// TestBundle_CRDsUpgradeSafelyFromThePreviousBundle: OLM v1 refuses an
// upgrade whose CRDs change unsafely for the objects stored under the old
// ones. The rules of its preflight, checked here: no CRD removed, no scope
// change, no version removed, and for each version in both no field
// removed, no type changed, no field newly required, no enum value removed
// (or enum added), no default changed.
func TestBundle_CRDsUpgradeSafelyFromThePreviousBundle(t *testing.T) {
	previous, current := readBundle(t, previousBundle(t)), readBundle(t, repoDir(t, "bundle"))
	var problems []string
	for name, old := range previous.crds {
		crd, ok := current.crds[name]
		if !ok {
			problems = append(problems, name+": removed")
			continue
		}
		problems = append(problems, crdChanges(old, crd)...)
	}
	NewWithT(t).Expect(problems).To(BeEmpty())
}

// TestCRDChanges_FindsEachUnsafeChange proves the check fails on each rule.
func TestCRDChanges_FindsEachUnsafeChange(t *testing.T) {
	base := func() *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{
				OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"mode": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}}},
						"size": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte(`1`)}},
						"note": {Type: "string"},
					}},
				}},
			}}},
		}}
	}
	spec := func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
		s := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		return &s
	}
	setSpec := func(c *apiextensionsv1.CustomResourceDefinition, s *apiextensionsv1.JSONSchemaProps) {
		c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = *s
	}
	for name, change := range map[string]func(*apiextensionsv1.CustomResourceDefinition){
		"scope":   func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = apiextensionsv1.ClusterScoped },
		"version": func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Name = "v2" },
		"removed": func(c *apiextensionsv1.CustomResourceDefinition) {
			s := spec(c)
			delete(s.Properties, "note")
			setSpec(c, s)
		},
		"type": func(c *apiextensionsv1.CustomResourceDefinition) {
			s := spec(c)
			p := s.Properties["note"]
			p.Type = "integer"
			s.Properties["note"] = p
			setSpec(c, s)
		},
		"required": func(c *apiextensionsv1.CustomResourceDefinition) {
			s := spec(c)
			s.Required = []string{"note"}
			setSpec(c, s)
		},
		"enum": func(c *apiextensionsv1.CustomResourceDefinition) {
			s := spec(c)
			p := s.Properties["mode"]
			p.Enum = p.Enum[:1]
			s.Properties["mode"] = p
			setSpec(c, s)
		},
		"default": func(c *apiextensionsv1.CustomResourceDefinition) {
			s := spec(c)
			p := s.Properties["size"]
			p.Default = &apiextensionsv1.JSON{Raw: []byte(`2`)}
			s.Properties["size"] = p
			setSpec(c, s)
		},
	} {
		changed := base()
		change(changed)
		NewWithT(t).Expect(crdChanges(base(), changed)).NotTo(BeEmpty(), name)
	}
	NewWithT(t).Expect(crdChanges(base(), base())).To(BeEmpty())
}

// crdChanges lists the unsafe changes from old to crd.
func crdChanges(old, crd *apiextensionsv1.CustomResourceDefinition) []string {
	var problems []string
	if old.Spec.Scope != crd.Spec.Scope {
		problems = append(problems, fmt.Sprintf("%s: scope %s → %s", old.Name, old.Spec.Scope, crd.Spec.Scope))
	}
	for _, ov := range old.Spec.Versions {
		i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == ov.Name })
		if i < 0 {
			problems = append(problems, fmt.Sprintf("%s: version %s removed", old.Name, ov.Name))
			continue
		}
		nv := crd.Spec.Versions[i]
		if ov.Schema == nil || nv.Schema == nil {
			continue
		}
		problems = append(problems, schemaChanges(old.Name+" "+ov.Name, ov.Schema.OpenAPIV3Schema, nv.Schema.OpenAPIV3Schema)...)
	}
	return problems
}

// valueChanges compares the values two schemas of one field allow: the enum
// and the default.
func valueChanges(path string, old, cur *apiextensionsv1.JSONSchemaProps) []string {
	var problems []string
	if len(cur.Enum) > 0 {
		if len(old.Enum) == 0 {
			problems = append(problems, path+": an enum restricts values that were free")
		}
		for _, e := range old.Enum {
			if !slices.ContainsFunc(cur.Enum, func(c apiextensionsv1.JSON) bool { return string(c.Raw) == string(e.Raw) }) {
				problems = append(problems, fmt.Sprintf("%s: enum value %s removed", path, e.Raw))
			}
		}
	}
	if (old.Default == nil) != (cur.Default == nil) || (old.Default != nil && string(old.Default.Raw) != string(cur.Default.Raw)) {
		problems = append(problems, path+": default changed")
	}
	return problems
}

// schemaChanges compares two schemas of one field, recursively.
func schemaChanges(path string, old, cur *apiextensionsv1.JSONSchemaProps) []string {
	if old == nil || cur == nil {
		return nil
	}
	var problems []string
	if old.Type != cur.Type {
		problems = append(problems, fmt.Sprintf("%s: type %q → %q", path, old.Type, cur.Type))
	}
	for _, r := range cur.Required {
		if !slices.Contains(old.Required, r) {
			problems = append(problems, fmt.Sprintf("%s: %s newly required", path, r))
		}
	}
	problems = append(problems, valueChanges(path, old, cur)...)
	for name, op := range old.Properties {
		np, ok := cur.Properties[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s.%s: removed", path, name))
			continue
		}
		problems = append(problems, schemaChanges(path+"."+name, &op, &np)...)
	}
	if old.Items != nil && cur.Items != nil {
		problems = append(problems, schemaChanges(path+"[]", old.Items.Schema, cur.Items.Schema)...)
	}
	if old.AdditionalProperties != nil && cur.AdditionalProperties != nil {
		problems = append(problems, schemaChanges(path+"{}", old.AdditionalProperties.Schema, cur.AdditionalProperties.Schema)...)
	}
	return problems
}
