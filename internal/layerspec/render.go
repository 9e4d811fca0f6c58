package layerspec

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/redact"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// Rendered is what a layer would apply: its objects in apply order and its
// tests, read from one revision of its source.
type Rendered struct {
	// Revision is the source artifact's revision ("" for a local directory).
	Revision string
	Objects  []*unstructured.Unstructured
	Tests    []*unstructured.Unstructured
	// Redactor knows the values of the layer's Secrets.
	Redactor *redact.Redactor
}

// All is every object the layer defines: its objects, then its tests.
func (r *Rendered) All() []*unstructured.Unstructured {
	return append(append(make([]*unstructured.Unstructured, 0, len(r.Objects)+len(r.Tests)), r.Objects...), r.Tests...)
}

// RenderError: the layer's directory does not render (a file that does not
// parse, a kustomization that fails), naming the revision and the file.
type RenderError struct {
	Revision string
	Err      error
}

func (e *RenderError) Error() string { return fmt.Sprintf("revision %s: %v", e.Revision, e.Err) }
func (e *RenderError) Unwrap() error { return e.Err }

// Render reads the layer's directory loc into objects in apply order and
// its tests, and learns the values of its Secrets.
func Render(layer *kraanv1.AddonsLayer, loc *Location) (*Rendered, error) {
	res, err := manifest.Read(loc.Dir, manifest.Options{
		Root: loc.Root, Layer: layer.Name, Version: layer.Spec.Version, Shard: layer.Labels[manifest.ShardLabel],
	})
	if err != nil {
		return nil, &RenderError{Revision: loc.Revision, Err: err}
	}
	redactor := &redact.Redactor{}
	redactor.AddObjects(res.Objects)
	manifest.SortForApply(res.Objects)
	objects, tests := manifest.SplitLayerTests(res.Objects)
	return &Rendered{Revision: loc.Revision, Objects: objects, Tests: tests, Redactor: redactor}, nil
}

// RenderLayer does what a reconcile does before it changes anything: it
// reads the layer's source with c, fetches its current artifact into store
// and renders the layer's directory. defaultSourceNamespace is the
// operator's --default-source-namespace. A source that is missing or not
// ready is an error saying so; every error reads as the layer's status
// would.
func RenderLayer(ctx context.Context, c client.Client, store *source.Store, layer *kraanv1.AddonsLayer, defaultSourceNamespace string) (*Rendered, error) {
	loc, err := Locate(ctx, c, store, layer, defaultSourceNamespace)
	if err != nil {
		return nil, err
	}
	return Render(layer, loc)
}

// RenderLayerDir renders dir, a working copy of the layer's directory, as
// the layer would render it from its source.
func RenderLayerDir(layer *kraanv1.AddonsLayer, dir string) (*Rendered, error) {
	return Render(layer, &Location{Root: dir, Dir: dir})
}
