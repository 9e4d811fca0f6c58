package releasespec

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/redact"
)

// Preview is what the next reconcile of a HelmRelease would install or
// upgrade to, rendered without changing anything.
type Preview struct {
	helm.Preview
	// Target is where the release lives.
	Target helm.Target
	// ChartVersion is the desired chart's version.
	ChartVersion string
	// Redactor knows the values that came from valuesFrom Secrets.
	Redactor *redact.Redactor
}

// PreviewRelease composes hr's desired chart and values exactly as a
// reconcile does (charts gets the chart, reader the valuesFrom objects, the
// schema checked when the spec asks for it) and renders them with engine as
// the next install or upgrade would, as a dry run. The release is read and
// rendered as the caller, not as the release's service account: whoever
// previews may not be allowed to impersonate it.
func PreviewRelease(ctx context.Context, engine *helm.Engine, reader client.Reader, charts ChartGetter, hr *kraanv1.HelmRelease) (*Preview, error) {
	p := &Preview{Redactor: &redact.Redactor{}, Target: TargetOf(hr, "")}
	p.Target.Impersonate = ""
	// The preview runs outside the operator, without its feature gates:
	// Flux's defaults.
	p.Target.PostRenderStrategy = defaults.Defaults{}.PostRenderStrategy(&hr.Spec)
	cluster, err := ClusterOf(ctx, reader, hr)
	if err != nil {
		return nil, err
	}
	p.Target.Cluster = cluster
	got, err := charts.GetChart(ctx, hr)
	if err != nil {
		return nil, p.Redactor.Error(fmt.Errorf("getting the chart of HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err))
	}
	chrt := got.Chart
	acts := ActionsOf(&hr.Spec)
	desired := helm.Desired{Chart: chrt, ChartDigest: got.Digest, PostRenderersDigest: PostRenderersDigest(&hr.Spec)}
	desired.Values, err = ComposeValues(ctx, reader, hr, p.Redactor)
	if err == nil && acts.SchemaValidated() {
		err = helm.ValidateValues(chrt, desired.Values)
	}
	if err != nil {
		return nil, p.Redactor.Error(fmt.Errorf("values of HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err))
	}
	p.ChartVersion = desired.ChartVersion()
	p.Preview, err = engine.Render(ctx, p.Target, desired, acts)
	if err != nil {
		return nil, p.Redactor.Error(err)
	}
	return p, nil
}
