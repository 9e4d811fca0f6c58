package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// applyCRDs applies the chart's crds/ directory before an upgrade, which Helm
// itself never does: Create adds the CRDs that do not exist yet, and
// CreateReplace also brings existing ones to the chart's version. Skip (the
// default for upgrades, as in Flux) leaves them alone.
func (e *Engine) applyCRDs(ctx context.Context, target Target, ch *helmchart.Chart, policy string) error {
	if policy == "" || policy == kraanv1.CRDsSkip {
		return nil
	}
	c, err := e.clientFor(target)
	if err != nil {
		return err
	}
	for _, crd := range ch.CRDObjects() {
		objs, err := decodeObjects(crd.File.Data)
		if err != nil {
			return fmt.Errorf("decoding CRD file %s: %w", crd.Filename, err)
		}
		for _, obj := range objs {
			if err := applyCRD(ctx, c, obj, policy); err != nil {
				return fmt.Errorf("applying CRD %s of %s: %w", obj.GetName(), crd.Filename, err)
			}
		}
	}
	// Kinds the CRDs define must resolve in the upgrade that follows.
	cc, err := e.clientsFor(target)
	if err != nil {
		return err
	}
	cc.mapper.Reset()
	return nil
}

func applyCRD(ctx context.Context, c client.Client, obj *unstructured.Unstructured, policy string) error {
	if policy == kraanv1.CRDsCreate {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	return c.Patch(ctx, obj, client.Apply, client.FieldOwner(driftFieldOwner), client.ForceOwnership) //nolint:staticcheck // server-side apply of unstructured objects
}

// decodeObjects decodes a multi-document YAML file.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// installCRDsByEngine is the policy the engine applies before an install:
// CreateReplace only (Helm's install creates missing CRDs itself, and never
// replaces one).
func installCRDsByEngine(acts Actions) string {
	if policy := acts.installCRDs(); policy == kraanv1.CRDsCreateReplace {
		return policy
	}
	return kraanv1.CRDsSkip
}
