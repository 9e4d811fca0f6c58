package helm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"helm.sh/helm/v4/pkg/action"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Preview is what an install or upgrade of a release would apply, next to
// what its newest revision applied, as objects. Nothing is written: Helm
// renders the chart as a dry run of the action the engine would take.
type Preview struct {
	// CurrentRevision is the newest revision in storage, 0 when there is none.
	CurrentRevision int
	// CurrentChart is the chart name-version of that revision ("" for none).
	CurrentChart string
	// Current are the objects of the newest revision's manifest.
	Current []*unstructured.Unstructured
	// Desired are the objects the chart renders to now, after the spec's
	// post-renderers, with the namespace Helm would give them.
	Desired []*unstructured.Unstructured
}

// Render renders desired for target as the next install or upgrade would,
// with the cluster's capabilities and lookups (Helm's server dry run), and
// returns it beside the objects of the newest revision. It reads release
// storage (Secrets in the storage namespace) and writes nothing.
func (e *Engine) Render(ctx context.Context, target Target, desired Desired, acts Actions) (Preview, error) {
	cfg, err := e.configFor(target, slog.DiscardHandler, nil)
	if err != nil {
		return Preview{}, err
	}
	p, latest, err := e.current(cfg, target)
	if err != nil {
		return Preview{}, err
	}
	manifest, err := e.dryRun(ctx, cfg, target, desired, acts, latest)
	if err != nil {
		return Preview{}, fmt.Errorf("rendering release %s/%s: %w", target.StorageNamespace, target.ReleaseName, err)
	}
	if p.Desired, err = e.objectsOf(target, manifest); err != nil {
		return Preview{}, err
	}
	return p, nil
}

// Current returns the newest revision of target's release and its objects
// (Preview.Desired empty): what the release applied last.
func (e *Engine) Current(_ context.Context, target Target) (Preview, error) {
	cfg, err := e.configFor(target, slog.DiscardHandler, nil)
	if err != nil {
		return Preview{}, err
	}
	p, _, err := e.current(cfg, target)
	return p, err
}

// current reads the newest revision from storage, and returns it; nil when
// storage holds none.
func (e *Engine) current(cfg *action.Configuration, target Target) (Preview, *release.Release, error) {
	obs, err := observe(cfg, target.ReleaseName)
	if err != nil || obs.Latest == nil {
		return Preview{}, nil, err
	}
	p := Preview{CurrentRevision: obs.Latest.Version}
	if md := obs.Latest.Chart; md != nil && md.Metadata != nil {
		p.CurrentChart = md.Metadata.Name + "-" + md.Metadata.Version
	}
	p.Current, err = e.objectsOf(target, obs.Latest.Manifest)
	return p, obs.Latest, err
}

// objectsOf decodes a manifest of target's release, with the mapper of the
// cluster it lives in.
func (e *Engine) objectsOf(target Target, manifest string) ([]*unstructured.Unstructured, error) {
	cc, err := e.clientsFor(target)
	if err != nil {
		return nil, err
	}
	return manifestObjects(manifest, target.Namespace, cc.mapper)
}

// dryRun runs the install or upgrade the engine would run, as a dry run that
// still talks to the cluster for its capabilities and lookups, and returns
// the rendered manifest.
func (e *Engine) dryRun(ctx context.Context, cfg *action.Configuration, target Target, desired Desired,
	acts Actions, latest *release.Release) (string, error) {
	labels := desired.labels()
	var rendered ri.Releaser
	var err error
	if latest == nil {
		install := newInstall(cfg, target, acts, ApplyMethods{}, labels)
		install.DryRunStrategy = action.DryRunServer
		install.PostRenderer = postRendererFor(acts.PostRender, nil)
		c, done, sandboxErr := e.sandboxed(ctx, cfg, target, forPostRendering(desired.Chart, install.PostRenderer), desired.Values, installRelease(install))
		if sandboxErr != nil {
			return "", sandboxErr
		}
		defer done()
		rendered, err = install.RunWithContext(ctx, c, desired.Values)
	} else {
		upgrade := newUpgrade(cfg, target, acts, ApplyMethods{}, latest, labels)
		upgrade.DryRunStrategy = action.DryRunServer
		upgrade.PostRenderer = postRendererFor(acts.PostRender, nil)
		c, done, sandboxErr := e.sandboxedUpgrade(ctx, cfg, upgrade, target,
			forPostRendering(desired.Chart, upgrade.PostRenderer), desired.Values, latest)
		if sandboxErr != nil {
			return "", sandboxErr
		}
		defer done()
		rendered, err = upgrade.RunWithContext(ctx, target.ReleaseName, c, desired.Values)
	}
	if err != nil {
		return "", err
	}
	rel, err := v1Release(rendered)
	if err != nil || rel == nil {
		return "", errors.Join(err, errNoRecord)
	}
	return rel.Manifest, nil
}
