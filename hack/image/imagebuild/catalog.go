package imagebuild

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

// CatalogConfigsDir is where the file-based catalog lives in the catalog
// image; the label LabelCatalogConfigs tells opm and OLM.
const (
	CatalogConfigsDir   = "configs"
	LabelCatalogConfigs = "operators.operatorframework.io.index.configs.v1"
)

// CatalogImage is the catalog image of the file-based catalog in catalogDir
// with the images pinned: the bundle image (each olm.bundle's image) and the
// operator image (relatedImages, and the CSV inside olm.bundle.object
// properties) by digest. The image holds only the catalog under /configs:
// OLM serves it with its own opm (a CatalogSource with
// grpcPodConfig.extractContent), and `opm render` reads it.
func CatalogImage(catalogDir string, bundle, operator Pin, m Metadata) (v1.Image, error) {
	entries, err := TreeEntries(catalogDir, CatalogConfigsDir)
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		if e.Mode.IsDir() || !catalogFile(e.Name) {
			continue
		}
		pinned, err := PinCatalogFile(e.Data, bundle, operator)
		if err != nil {
			return nil, fmt.Errorf("pinning images in %s: %w", path.Join(catalogDir, strings.TrimPrefix(e.Name, CatalogConfigsDir+"/")), err)
		}
		entries[i].Data = pinned
	}
	labels := m.Labels()
	labels[LabelTitle] = "kraan-operator-catalog"
	labels[LabelCatalogConfigs] = "/" + CatalogConfigsDir
	layer, err := NewLayer(entries, m.Created)
	if err != nil {
		return nil, err
	}
	return assemble([]v1.Layer{layer}, v1.Platform{OS: "linux", Architecture: "amd64"},
		v1.Config{Labels: labels}, m.Created, []string{"file-based catalog in /configs"})
}

// catalogFile says whether opm reads the file: YAML or JSON.
func catalogFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")
}

// PinCatalogFile pins the bundle and operator images of the bundle built
// with this catalog — the olm.bundle whose image is bundle.From — including
// the objects base64-encoded in olm.bundle.object properties (the CSV among
// them gets the relatedImages the bundle image's CSV has), and writes the
// file-based catalog file (a YAML stream, which JSON documents are too) back
// as YAML. The catalog's earlier bundles were published before: they keep
// the references they were released with.
func PinCatalogFile(data []byte, bundle, operator Pin) ([]byte, error) {
	var out []byte
	for _, doc := range splitYAML(data) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		if obj["schema"] == "olm.bundle" && obj["image"] == bundle.From {
			Pins{bundle, operator}.Apply(obj)
			if err := pinBundleObjects(obj, operator); err != nil {
				return nil, err
			}
			// What opm renders from the pinned bundle image: the bundle
			// image itself, then the CSV's relatedImages.
			obj["relatedImages"] = []any{
				relatedImage("", bundle.To),
				relatedImage(RelatedImageName, operator.To),
			}
		}
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out = append(append(out, "---\n"...), y...)
	}
	return out, nil
}

// pinBundleObjects applies the pins inside the olm.bundle.object properties
// of an olm.bundle: opm renders a bundle directory's manifests there, the CSV
// among them.
func pinBundleObjects(obj map[string]any, operator Pin) error {
	props, _ := obj["properties"].([]any)
	for _, p := range props {
		prop, _ := p.(map[string]any)
		if prop["type"] != "olm.bundle.object" {
			continue
		}
		value, _ := prop["value"].(map[string]any)
		data, _ := value["data"].(string)
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return fmt.Errorf("olm.bundle.object of %v: %w", obj["name"], err)
		}
		var o map[string]any
		if err := json.Unmarshal(raw, &o); err != nil {
			return fmt.Errorf("olm.bundle.object of %v: %w", obj["name"], err)
		}
		if o["kind"] == "ClusterServiceVersion" {
			if err := pinCSVObject(o, operator); err != nil {
				return fmt.Errorf("olm.bundle.object of %v: %w", obj["name"], err)
			}
		} else if _, n := (Pins{operator}).Apply(o); n == 0 {
			continue
		}
		raw, err = json.Marshal(o)
		if err != nil {
			return err
		}
		value["data"] = base64.StdEncoding.EncodeToString(raw)
	}
	return nil
}

// CatalogBundleImage is the image, by tag as `make catalog` wrote it, of the
// olm.bundle named bundleName (BundleName of bundle/) in the catalog in
// catalogDir, which lists it once.
func CatalogBundleImage(catalogDir, bundleName string) (string, error) {
	images := map[string]bool{}
	err := filepath.WalkDir(catalogDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range splitYAML(data) {
			var b struct{ Schema, Name, Image string }
			if err := yaml.Unmarshal(doc, &b); err != nil {
				return fmt.Errorf("reading %s: %w", p, err)
			}
			if b.Schema == "olm.bundle" && b.Name == bundleName {
				images[b.Image] = true
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(images) != 1 {
		return "", fmt.Errorf("the catalog in %s lists %d bundle images for %s, want 1; run `make catalog`", catalogDir, len(images), bundleName)
	}
	for img := range images {
		return img, nil
	}
	return "", nil
}
