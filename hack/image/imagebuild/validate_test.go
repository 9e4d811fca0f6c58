package imagebuild_test

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	validator "github.com/operator-framework/api/pkg/validation/interfaces"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The bundle validation `operator-sdk bundle validate --select-optional
// suite=operatorframework` runs, done in-process with the library it is built
// on (operator-framework/api): `make test` needs no operator-sdk binary, whose
// build was the longest of a fresh machine's tools. `make bundle-validate`
// (CI) still runs the CLI on bundle/.

// operatorFrameworkSuite is the CLI's optional suite=operatorframework.
var operatorFrameworkSuite = validator.Validators{
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.AlphaDeprecatedAPIsValidator,
	validation.GoodPracticesValidator,
}

// registryV1Kinds are the kinds a registry+v1 bundle may ship beside its CSV
// and CRDs: OLM installs no others.
var registryV1Kinds = map[string]bool{
	"Secret": true, "ConfigMap": true, "Service": true, "ServiceAccount": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	"PrometheusRule": true, "ServiceMonitor": true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true, "NetworkPolicy": true,
	"ConsoleYAMLSample": true, "ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true,
}

// bundleAnnotations are the annotations a registry+v1 bundle's
// metadata/annotations.yaml must carry, with the value each must have ("" for
// any non-empty value).
var bundleAnnotations = map[string]string{
	"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
	"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
	"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
	"operators.operatorframework.io.bundle.package.v1":   "",
	"operators.operatorframework.io.bundle.channels.v1":  "",
}

// bundleProblems returns every error and warning the validation finds in the
// bundle laid out in dir (manifests/ and metadata/).
func bundleProblems(dir string) ([]string, error) {
	problems, err := bundleFormatProblems(dir)
	if err != nil {
		return nil, err
	}
	bundle, err := manifests.GetBundleFromDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, fmt.Errorf("reading the bundle: %w", err)
	}
	if bundle.CSV == nil {
		problems = append(problems, "the bundle holds no ClusterServiceVersion")
	}
	results := validation.BundleValidator.Validate(bundle)
	if bundle.CSV != nil {
		results = append(results, validation.ClusterServiceVersionValidator.Validate(bundle.CSV)...)
	}
	crds := make([]any, 0, len(bundle.V1CRDs))
	for _, crd := range bundle.V1CRDs {
		crds = append(crds, crd)
	}
	if len(bundle.V1beta1CRDs) > 0 {
		problems = append(problems, "the bundle ships apiextensions.k8s.io/v1beta1 CRDs")
	}
	results = append(results, validation.CustomResourceDefinitionValidator.Validate(crds...)...)
	objs := bundle.ObjectsToValidate()
	for _, obj := range bundle.Objects {
		kind := obj.GetKind()
		if kind != "ClusterServiceVersion" && kind != "CustomResourceDefinition" {
			if !registryV1Kinds[kind] {
				problems = append(problems, fmt.Sprintf("%s %s: a kind registry+v1 bundles cannot ship", kind, obj.GetName()))
			}
			for _, e := range apivalidation.ValidateObjectMetaAccessor(obj, false, func(string, bool) []string { return nil }, field.NewPath("metadata")) {
				problems = append(problems, fmt.Sprintf("%s %s: %v", kind, obj.GetName(), e))
			}
		}
		objs = append(objs, obj)
	}
	objs = append(objs, map[string]string{}) // the suite's optional values: none
	results = append(results, operatorFrameworkSuite.Validate(objs...)...)
	return append(problems, describeResults(results)...), nil
}

func describeResults(results []apierrors.ManifestResult) []string {
	var out []string
	for _, r := range results {
		for _, e := range r.Errors {
			out = append(out, fmt.Sprintf("error: %s: %s", r.Name, e.Error()))
		}
		for _, w := range r.Warnings {
			out = append(out, fmt.Sprintf("warning: %s: %s", r.Name, w.Error()))
		}
	}
	return out
}

// bundleFormatProblems checks the layout OLM unpacks: the annotations naming
// the format, package and channels, and a manifests directory.
func bundleFormatProblems(dir string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading the bundle's annotations: %w", err)
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding metadata/annotations.yaml: %w", err)
	}
	var problems []string
	for key, want := range bundleAnnotations {
		got := doc.Annotations[key]
		switch {
		case got == "":
			problems = append(problems, "metadata/annotations.yaml lacks "+key)
		case want != "" && got != want:
			problems = append(problems, fmt.Sprintf("metadata/annotations.yaml: %s is %q, want %q", key, got, want))
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "manifests")); err != nil || !fi.IsDir() {
		problems = append(problems, "the bundle has no manifests/ directory")
	}
	return problems, nil
}

// unpackImage writes the files of the image ref in the test registry into a
// new directory, as OLM's bundle unpacker does.
func unpackImage(t *testing.T, ref string) string {
	t.Helper()
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(parsed, tlsTransport())
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	dir := t.TempDir()
	fs := mutate.Extract(img)
	defer func() { _ = fs.Close() }()
	files := tar.NewReader(fs)
	for {
		hdr, err := files.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatalf("reading %s: %v", ref, err)
		}
		path := filepath.Clean(strings.TrimPrefix(hdr.Name, "/"))
		if !filepath.IsLocal(path) {
			t.Fatalf("%s holds a file outside its root: %s", ref, hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(filepath.Join(dir, path), 0o755)
		case tar.TypeReg:
			err = writeFile(filepath.Join(dir, path), files)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(path string, content io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, content); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// TestBundleProblems_FindWhatOperatorHubRefuses: bundle/ passes, and the
// validation finds a category OperatorHub does not know, a capability level
// that does not exist and a bundle whose annotations name no package.
func TestBundleProblems_FindWhatOperatorHubRefuses(t *testing.T) {
	g := NewWithT(t)
	root := moduleRoot(t)
	problems, err := bundleProblems(filepath.Join(root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())

	dir := t.TempDir()
	g.Expect(os.CopyFS(dir, os.DirFS(filepath.Join(root, "bundle")))).To(Succeed())
	csv := filepath.Join(dir, "manifests", "kraan-operator.clusterserviceversion.yaml")
	edit(t, csv, "categories: Integration & Delivery", "categories: Mining")
	edit(t, csv, "capabilities: Basic Install", "capabilities: Somewhat Installed")
	edit(t, filepath.Join(dir, "metadata", "annotations.yaml"), "operators.operatorframework.io.bundle.package.v1: kraan-operator", "")
	problems, err = bundleProblems(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(ContainElements(
		ContainSubstring("Mining"),
		ContainSubstring("Somewhat Installed"),
		ContainSubstring("lacks operators.operatorframework.io.bundle.package.v1"),
	))
}

func edit(t *testing.T, path, old, replacement string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), old) {
		t.Fatalf("%s does not hold %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), old, replacement, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
