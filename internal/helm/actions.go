package helm

import (
	"context"
	"errors"

	"helm.sh/helm/v4/pkg/action"
	ri "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// install applies the chart's CRDs as the spec says, then installs.
func (e *Engine) install(ctx context.Context, cfg *action.Configuration, req Request, obs Observation, labels map[string]string) (*release.Release, error) {
	if obs.Latest == nil {
		// Only the install's own check: what comes after reads storage.
		stored := cfg.Releases.Driver
		cfg.Releases.Driver = noHistory{stored}
		defer func() { cfg.Releases.Driver = stored }()
	}
	install := newInstall(cfg, req.Target, req.Actions, req.Apply, labels)
	install.PostRenderer = postRendererFor(req.Actions.PostRender, req.PostRenderer)
	if err := e.applyCRDs(ctx, req.Target, req.Desired.Chart, installCRDsByEngine(req.Actions)); err != nil {
		return nil, err
	}
	c, done, err := e.sandboxed(ctx, cfg, req.Target, forPostRendering(req.Desired.Chart, install.PostRenderer), req.Desired.Values,
		installRelease(install))
	if err != nil {
		return nil, err
	}
	defer done()
	installed, err := install.RunWithContext(ctx, c, req.Desired.Values)
	if err != nil {
		return nil, err
	}
	return v1Release(installed)
}

// upgrade applies the chart's CRDs as the spec says, then upgrades.
func (e *Engine) upgrade(ctx context.Context, cfg *action.Configuration, req Request, obs Observation, labels map[string]string) error {
	upgrade := newUpgrade(cfg, req.Target, req.Actions, req.Apply, obs.Latest, labels)
	upgrade.PostRenderer = postRendererFor(req.Actions.PostRender, req.PostRenderer)
	if err := e.applyCRDs(ctx, req.Target, req.Desired.Chart, req.Actions.upgradeCRDs()); err != nil {
		return err
	}
	c, done, err := e.sandboxedUpgrade(ctx, cfg, upgrade, req.Target,
		forPostRendering(req.Desired.Chart, upgrade.PostRenderer), req.Desired.Values, obs.Latest)
	if err != nil {
		return err
	}
	defer done()
	_, err = upgrade.RunWithContext(ctx, req.Target.ReleaseName, c, req.Desired.Values)
	return err
}

// noHistory answers Helm's install-time query of a release's history
// ("is the name in use?") with none: storage was just read empty, or the
// operator's cache vouches that it is. A record made meanwhile cannot be
// overwritten either way: creating revision 1's Secret then fails with
// AlreadyExists, nothing changes, and the install is tried again.
type noHistory struct {
	driver.Driver
}

func (noHistory) Query(map[string]string) ([]ri.Releaser, error) {
	return nil, driver.ErrReleaseNotFound
}

// failureOf says why rel failed, from its description or its tests.
func failureOf(rel *release.Release) string {
	if rel.Info.Status == rcommon.StatusFailed {
		return rel.Info.Description
	}
	return "a test hook failed"
}

// runTests runs the test hooks; a failed test is recorded in storage by Helm
// (the hook's phase) and returned as an error.
func runTests(cfg *action.Configuration, req Request) error {
	tested, cleanup, err := newTest(cfg, req.Target, req.Actions).Run(req.Target.ReleaseName)
	if cleanup != nil {
		// Helm 4 leaves the deletion of the test hooks (their delete
		// policies) to the caller, after it read their logs.
		if cerr := cleanup(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	rel, err := v1Release(tested)
	if err != nil {
		return err
	}
	if TestsFailed(rel) {
		return errors.New("a test hook failed")
	}
	return nil
}
