package imagebuild

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

// The bundle's directories, where bundle.Dockerfile copies them and the
// operators.operatorframework.io.bundle.* labels point.
var bundleDirs = []string{"manifests", "metadata", "tests/scorecard"}

// RelatedImageName is the name of the operator image in the CSV's
// relatedImages.
const RelatedImageName = "kraan-operator"

// OperatorImageRef is the operator image the CSV in bundleDir deploys: the
// image of its first Deployment's first container, by tag as `make bundle`
// wrote it.
func OperatorImageRef(bundleDir string) (string, error) {
	_, csv, err := readCSV(bundleDir)
	if err != nil {
		return "", err
	}
	var c struct {
		Spec struct {
			Install struct {
				Spec struct {
					Deployments []struct {
						Spec struct {
							Template struct {
								Spec struct {
									Containers []struct{ Image string }
								}
							}
						}
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(csv, &c); err != nil {
		return "", err
	}
	d := c.Spec.Install.Spec.Deployments
	if len(d) == 0 || len(d[0].Spec.Template.Spec.Containers) == 0 || d[0].Spec.Template.Spec.Containers[0].Image == "" {
		return "", fmt.Errorf("the ClusterServiceVersion in %s deploys no container image", bundleDir)
	}
	return d[0].Spec.Template.Spec.Containers[0].Image, nil
}

// readCSV finds the ClusterServiceVersion among the bundle's manifests.
// BundleName is the name of the bundle in bundleDir: its CSV's name, which
// is the name of its olm.bundle in a catalog.
func BundleName(bundleDir string) (string, error) {
	_, csv, err := readCSV(bundleDir)
	if err != nil {
		return "", err
	}
	var c struct {
		Metadata struct{ Name string }
	}
	if err := yaml.Unmarshal(csv, &c); err != nil {
		return "", err
	}
	if c.Metadata.Name == "" {
		return "", fmt.Errorf("the ClusterServiceVersion in %s has no name", bundleDir)
	}
	return c.Metadata.Name, nil
}

func readCSV(bundleDir string) (string, []byte, error) {
	files, err := filepath.Glob(filepath.Join(bundleDir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		return "", nil, fmt.Errorf("%s/manifests must hold exactly one *.clusterserviceversion.yaml (found %d); run `make bundle`", bundleDir, len(files))
	}
	data, err := os.ReadFile(files[0])
	return files[0], data, err
}

// PinCSV rewrites the CSV: the operator image by digest wherever the tag
// appears (the Deployment, the containerImage annotation) and listed in
// spec.relatedImages, which disconnected installs mirror.
func PinCSV(csv []byte, operator Pin) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(csv, &obj); err != nil {
		return nil, fmt.Errorf("reading the ClusterServiceVersion: %w", err)
	}
	if err := pinCSVObject(obj, operator); err != nil {
		return nil, err
	}
	return yaml.Marshal(obj)
}

// pinCSVObject is PinCSV on the decoded CSV.
func pinCSVObject(obj map[string]any, operator Pin) error {
	if _, n := (Pins{operator}).Apply(obj); n == 0 {
		return fmt.Errorf("the ClusterServiceVersion does not mention the operator image %s", operator.From)
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return fmt.Errorf("the ClusterServiceVersion has no spec")
	}
	spec["relatedImages"] = []any{relatedImage(RelatedImageName, operator.To)}
	return nil
}

// BundleImage is the bundle image of bundleDir with the operator image
// pinned: the files bundle.Dockerfile copies, and as labels the annotations
// of metadata/annotations.yaml (which tell OLM and opm where the manifests
// are) plus the OCI labels of m.
func BundleImage(bundleDir string, operator Pin, m Metadata) (v1.Image, error) {
	csvPath, csv, err := readCSV(bundleDir)
	if err != nil {
		return nil, err
	}
	pinned, err := PinCSV(csv, operator)
	if err != nil {
		return nil, err
	}
	csvName := path.Join("manifests", filepath.Base(csvPath))
	var entries []Entry
	for _, d := range bundleDirs {
		e, err := TreeEntries(filepath.Join(bundleDir, filepath.FromSlash(d)), d)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e...)
	}
	for i := range entries {
		if entries[i].Name == csvName {
			entries[i].Data = pinned
		}
	}
	labels, err := bundleLabels(bundleDir)
	if err != nil {
		return nil, err
	}
	for k, v := range m.Labels() {
		labels[k] = v
	}
	labels[LabelTitle] = "kraan-operator-bundle"
	layer, err := NewLayer(parents(entries), m.Created)
	if err != nil {
		return nil, err
	}
	return assemble([]v1.Layer{layer}, v1.Platform{OS: "linux", Architecture: "amd64"},
		v1.Config{Labels: labels}, m.Created, []string{"bundle: manifests/, metadata/, tests/scorecard/"})
}

// bundleLabels are the annotations of metadata/annotations.yaml, which
// bundle.Dockerfile repeats as labels.
func bundleLabels(bundleDir string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(bundleDir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var a struct{ Annotations map[string]string }
	if err := yaml.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("reading %s/metadata/annotations.yaml: %w", bundleDir, err)
	}
	if !strings.HasSuffix(a.Annotations["operators.operatorframework.io.bundle.mediatype.v1"], "registry+v1") {
		return nil, fmt.Errorf("%s/metadata/annotations.yaml does not declare a registry+v1 bundle; run `make bundle`", bundleDir)
	}
	return a.Annotations, nil
}

// relatedImage is an entry of a CSV's or an olm.bundle's relatedImages.
func relatedImage(name, image string) map[string]any {
	return map[string]any{"name": name, "image": image}
}

// splitYAML splits a multi-document YAML stream on its "---" lines.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		d = bytes.TrimPrefix(d, []byte("---\n"))
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}
