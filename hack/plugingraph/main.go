// Command plugingraph draws docs/images/demo-layers.svg, the picture of
// `kubectl kraan graph -o svg` in docs/kubectl-plugin.md, from the demo's
// layers (examples/layers/<version>): the AddonsLayers of layers.yaml, and the
// HelmReleases of each layer's directory as the operator reads it
// (internal/manifest: Flux HelmReleases converted, labelled with their
// layer). Every object is drawn in the state `make demo` leaves it in
// (Deployed, Ready), which test/demo checks. `make docs` runs it.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/internal/plugin/graph"
)

func main() {
	out := flag.String("out", "docs/images/demo-layers.svg", "the SVG file to write (PNG when it ends in .png)")
	dir := flag.String("layers", "examples/layers/0.2.0", "the demo's repository at one version")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plugingraph:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	layers, err := readLayers(filepath.Join(dir, "layers.yaml"))
	if err != nil {
		return err
	}
	var releases []kraanv1.HelmRelease
	for i := range layers {
		l := &layers[i]
		deployed(l)
		res, err := manifest.Read(filepath.Join(dir, l.Spec.Source.Path), manifest.Options{Root: dir, Layer: l.Name, Version: l.Spec.Version})
		if err != nil {
			return fmt.Errorf("layer %s: %w", l.Name, err)
		}
		for _, obj := range res.Objects {
			if obj.GroupVersionKind() != kraanv1.GroupVersion.WithKind("HelmRelease") {
				continue
			}
			hr := kraanv1.HelmRelease{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &hr); err != nil {
				return err
			}
			ready(&hr)
			releases = append(releases, hr)
		}
	}
	format := graph.SVG
	if strings.HasSuffix(out, ".png") {
		format = graph.PNG
	}
	var img bytes.Buffer
	if err := plugin.Graph(layers, releases).Render(context.Background(), format, &img); err != nil {
		return err
	}
	return os.WriteFile(out, img.Bytes(), 0o644) //nolint:gosec // a documentation image, readable by all
}

// readLayers reads the AddonsLayers of a multi-document YAML file.
func readLayers(path string) ([]kraanv1.AddonsLayer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var layers []kraanv1.AddonsLayer
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		l := kraanv1.AddonsLayer{}
		if err := yaml.Unmarshal(doc, &l); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if l.Kind == "AddonsLayer" {
			layers = append(layers, l)
		}
	}
	return layers, nil
}

func deployed(l *kraanv1.AddonsLayer) {
	l.Status.State = kraanv1.DeployedState
	l.Status.Conditions = []metav1.Condition{{Type: kraanv1.ReadyCondition, Status: metav1.ConditionTrue}}
}

func ready(hr *kraanv1.HelmRelease) {
	hr.Status.Conditions = []metav1.Condition{{Type: kraanv1.ReadyCondition, Status: metav1.ConditionTrue}}
}
