package helm

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"

	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// fluxOriginLabels are the labels Flux helm-controller's own post-renderer
// puts on every object it deploys (helm.toolkit.fluxcd.io/name and
// /namespace, naming its HelmRelease). The engine does not write them, so a
// revision Flux made is compared without them.
var fluxOriginLabels = []string{"helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace"}

// adopt takes over a deployed revision another Helm client made — Flux
// helm-controller or the helm CLI, which write none of the engine's labels —
// when it is what the engine would deploy: the same chart name and version,
// the same values, and the same objects and hooks when the chart is rendered
// again with the spec's post-renderers (Flux's origin labels aside). It then
// records the engine's labels on that revision in storage, so that
// Desired.Matches holds from now on without rendering again.
//
// Without it, Desired.Matches finds no chart digest on such a revision and
// the first pass upgrades every release Flux made, to a new revision that
// deploys the same objects: migrating from Flux would touch every release.
// A revision that differs in any way is left to Plan, which upgrades it as
// before.
func (e *Engine) adopt(ctx context.Context, cfg *action.Configuration, req Request, rel *release.Release) error {
	// Without a chart digest there is nothing to record, and a revision
	// would look foreign on every pass.
	if !foreign(rel) || req.Desired.Chart == nil || req.Desired.ChartDigest == "" || !sameChartAndValues(req.Desired, rel) {
		return nil
	}
	log := logr.FromContextOrDiscard(ctx)
	pr := postRendererFor(req.Actions.PostRender, req.PostRenderer)
	// The engine renders with a final newline per template file when it
	// post-renders (forPostRendering); Flux 2.8+ (which always post-renders
	// its origin labels) and the helm 4 CLI with a post-renderer do not, and
	// a block scalar ending a file differs by that newline (helm/helm#31948).
	// A revision they made deploys what they would render, so it is adopted
	// when it matches either rendering; the next upgrade writes the
	// engine's.
	type rendering struct {
		chart    *chart.Chart
		pr       postrenderer.PostRenderer
		strategy kraanv1.PostRenderStrategy
	}
	// Flux post-renders as spec.postRenderStrategy says, combined when unset.
	fluxStrategy := cmp.Or(req.Actions.PostRender.FluxStrategy, kraanv1.PostRenderStrategyCombined)
	renderings := []rendering{
		{forPostRendering(req.Desired.Chart, pr), pr, req.Target.PostRenderStrategy},
		{req.Desired.Chart, asFluxRenders(pr, rel), fluxStrategy},
	}
	var why string
	for _, r := range renderings {
		want, err := e.renderForAdoption(ctx, cfg, req, r.chart, r.pr, r.strategy)
		if err != nil {
			// Not adopted: the upgrade Plan chooses reports the same error.
			log.V(1).Info("Not adopting a release made by another Helm client: the chart does not render",
				"release", rel.Name, "revision", rel.Version, "error", req.Redactor.Error(err).Error())
			return nil
		}
		var same bool
		if same, why = sameObjects(rel, want); same {
			break
		}
	}
	if why != "" {
		log.Info("Not adopting a release made by another Helm client: it differs from the desired state, so it is upgraded",
			"release", rel.Name, "revision", rel.Version, "difference", req.Redactor.String(why))
		return nil
	}
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	maps.Copy(rel.Labels, req.Desired.labels())
	// Its objects and hooks are what the engine renders itself: the record
	// is signed from now on, and its hooks may run.
	rel.Labels[recordTrustLabel] = string(RecordVerified)
	if err := cfg.Releases.Update(rel); err != nil {
		return fmt.Errorf("recording the adoption of release %s revision %d: %w", rel.Name, rel.Version, err)
	}
	log.Info("Adopted a release made by another Helm client, without a new revision",
		"release", rel.Name, "revision", rel.Version)
	return nil
}

// renderForAdoption renders c as an install of req would deploy it, with
// the cluster's capabilities: a dry run, nothing created, storage untouched
// (Helm 4's client dry run would replace the configuration's kube client and
// storage). SkipCRDs: the manifest never holds crds/, and a dry run would
// only warn about them.
func (e *Engine) renderForAdoption(ctx context.Context, cfg *action.Configuration, req Request,
	c *chart.Chart, pr postrenderer.PostRenderer, strategy kraanv1.PostRenderStrategy) (*release.Release, error) {
	target := req.Target
	target.PostRenderStrategy = strategy
	render := newInstall(cfg, target, req.Actions, ApplyMethods{}, nil)
	render.DryRunStrategy, render.SkipCRDs = action.DryRunServer, true
	render.PostRenderer = pr
	literal, done, err := e.sandboxed(ctx, cfg, req.Target, c, req.Desired.Values, installRelease(render))
	if err != nil {
		return nil, err
	}
	defer done()
	rendered, err := render.RunWithContext(ctx, literal, maps.Clone(req.Desired.Values))
	if err != nil {
		return nil, err
	}
	return v1Release(rendered)
}

// asFluxRenders is pr as Flux helm-controller runs it: followed by its
// origin labels (which sameObjects ignores), so that Helm 4 post-renders
// the chart as it did for Flux.
func asFluxRenders(pr postrenderer.PostRenderer, rel *release.Release) postrenderer.PostRenderer {
	origin := &commonMetadataPostRenderer{&kraanv1.CommonMetadata{Labels: map[string]string{
		fluxOriginLabels[0]: rel.Name, fluxOriginLabels[1]: rel.Namespace,
	}}}
	if pr == nil {
		return origin
	}
	return chain{pr, origin}
}

// foreign says whether rel is a deployed revision the engine did not make
// for this object: every revision the engine makes carries ChartDigestLabel,
// and its signature binds the object it was made for. A revision of the
// engine's labelled for another object is unverified: the object was deleted
// without uninstalling (its CRD removed, kubectl kraan uninstall) and made
// again. It is adopted as any foreign revision is, only when it is what the
// engine would deploy now, so signing it for this object vouches for nothing
// the engine did not render itself.
//
// A revision whose signature does not verify was written outside the
// operator from one of its own (an admin's helm rollback or upgrade, Flux
// helm-controller going back, copying the labels) or edited: it is adopted
// on the same terms, so that a rollback to what the spec says, or a release
// Flux managed for a while, is taken back without a new revision.
func foreign(rel *release.Release) bool {
	return rel != nil && rel.Info != nil && rel.Info.Status == rcommon.StatusDeployed &&
		rel.Chart != nil && rel.Chart.Metadata != nil &&
		(rel.Labels[ChartDigestLabel] == "" || recordTrust(rel) != RecordVerified)
}

// sameChartAndValues is Desired.Matches without the labels: what can be
// checked before rendering.
func sameChartAndValues(d Desired, rel *release.Release) bool {
	meta := d.Chart.Metadata
	return meta != nil && rel.Chart.Metadata.Name == meta.Name && rel.Chart.Metadata.Version == meta.Version &&
		ValuesDigest(rel.Config) == ValuesDigest(d.Values)
}

// sameObjects compares what two revisions deploy, object by object, and says
// where they first differ. Objects are compared parsed, not as text: Flux's
// post-renderers (kustomize) print YAML differently from Helm.
func sameObjects(have, want *release.Release) (bool, string) {
	haveObjs, err := deployedObjects(have)
	if err != nil {
		return false, err.Error()
	}
	wantObjs, err := deployedObjects(want)
	if err != nil {
		return false, err.Error()
	}
	for key, obj := range wantObjs {
		if !reflect.DeepEqual(haveObjs[key], obj) {
			return false, key
		}
	}
	for key := range haveObjs {
		if _, ok := wantObjs[key]; !ok {
			return false, key
		}
	}
	return true, ""
}

// deployedObjects parses rel's manifest and hooks into objects keyed by kind,
// namespace and name (hooks by their path too), without Flux's origin labels.
func deployedObjects(rel *release.Release) (map[string]map[string]any, error) {
	objs := map[string]map[string]any{}
	add := func(prefix, manifest string) error {
		for _, doc := range releaseutil.SplitManifests(manifest) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				return fmt.Errorf("parsing revision %d: %w", rel.Version, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			withoutFluxOrigin(obj)
			objs[prefix+obj.GetAPIVersion()+" "+obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName()] = obj.Object
		}
		return nil
	}
	if err := add("", rel.Manifest); err != nil {
		return nil, err
	}
	for _, h := range rel.Hooks {
		if err := add("hook "+h.Path+": ", h.Manifest); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

func withoutFluxOrigin(obj *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		return
	}
	for _, l := range fluxOriginLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "labels")
		return
	}
	obj.SetLabels(labels)
}
