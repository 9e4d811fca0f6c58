package plugin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// managed finds what layers and releases manage, with the operator's own
// notion of it: a layer's inventory (status.resources), a release's newest
// revision in Helm storage, and health as the layer judges it.
type managed struct {
	s       *session
	applier *apply.Applier
	engine  *helm.Engine
}

func newManaged(s *session) (*managed, error) {
	engine, err := helm.NewEngine(s.config)
	if err != nil {
		return nil, err
	}
	return &managed{s: s, applier: apply.NewApplier(s.client), engine: engine}, nil
}

// layerObjects are the objects in the layer's inventory.
func (m *managed) layerObjects(l *kraanv1.AddonsLayer) []*unstructured.Unstructured {
	return inventoryObjects(l)
}

// releaseObjects are the objects of the release's newest revision, and
// that revision's number and chart.
func (m *managed) releaseObjects(ctx context.Context, hr *kraanv1.HelmRelease) (helm.Preview, error) {
	target := releasespec.TargetOf(hr, "")
	target.Impersonate = ""
	p, err := m.engine.Current(ctx, target)
	if err != nil {
		return p, fmt.Errorf("reading release %s/%s from Helm storage: %w", target.StorageNamespace, target.ReleaseName, err)
	}
	return p, nil
}

// health is the object's readiness as the layer judges it: "Ready", or the
// reason and message; "NotFound" when it does not exist.
func (m *managed) health(ctx context.Context, obj *unstructured.Unstructured) (state, error) {
	h, err := m.applier.HealthOf(ctx, obj)
	switch {
	case err != nil:
		return state{}, err
	case h.Ready:
		return state{word: "Ready", tone: toneGood}, nil
	case h.Failed || h.Reason == apply.NotFound:
		return state{word: h.Reason, tone: toneBad, message: h.Message}, nil
	}
	return state{word: h.Reason, tone: toneBusy, message: h.Message}, nil
}
