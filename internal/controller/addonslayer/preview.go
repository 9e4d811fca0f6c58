package addonslayer

import (
	"context"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
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

// RenderLayer does what a reconcile does before it changes anything: it
// reads the layer's source with c, fetches its current artifact into store
// and renders the layer's directory. defaultSourceNamespace is the
// operator's --default-source-namespace. A source that is missing or not
// ready is an error saying so.
func RenderLayer(ctx context.Context, c client.Client, store *source.Store, layer *kraanv1.AddonsLayer, defaultSourceNamespace string) (*Rendered, error) {
	r := &Reconciler{Client: c, Store: store, Options: Options{DefaultSourceNamespace: defaultSourceNamespace}}
	sc := &layerScope{layer: layer.DeepCopy(), now: time.Now()}
	return render(ctx, sc, r.reconcileSource, r.reconcileRender)
}

// RenderLayerDir renders dir, a working copy of the layer's directory, as
// the layer would render it from its source.
func RenderLayerDir(ctx context.Context, layer *kraanv1.AddonsLayer, dir string) (*Rendered, error) {
	r := &Reconciler{}
	sc := &layerScope{layer: layer.DeepCopy(), now: time.Now(), root: dir, dir: dir}
	return render(ctx, sc, r.reconcileRender)
}

func render(ctx context.Context, sc *layerScope, steps ...layerStep) (*Rendered, error) {
	for _, step := range steps {
		if h := step(ctx, sc); h != nil {
			sc.halt = h
			sc.redactHalt()
			// The message is the one the layer's status would show.
			return nil, errors.New(strings.TrimPrefix(h.message, "AddonsLayer failed, "))
		}
	}
	return &Rendered{Revision: sc.revision, Objects: sc.objects, Tests: sc.tests, Redactor: &sc.redactor}, nil
}
