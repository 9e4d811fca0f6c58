package helm

import (
	"time"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Actions say how a release's Helm actions run, in the engine's own terms.
// Each controller builds them from its own API (releasespec.ActionsOf from a
// HelmRelease's spec; the chart-backed controller from a watch's
// annotations), so the engine knows no kind's spec. The zero value is
// Flux's defaults: every action waits, 5m unless set, upgrades keep 5
// revisions, install creates the chart's CRDs and upgrade leaves them.
type Actions struct {
	// Timeout is the timeout of the actions that set none of their own;
	// zero is Helm's 5m.
	Timeout time.Duration
	// MaxHistory is how many revisions an upgrade or rollback keeps; nil
	// keeps 5, zero keeps every one.
	MaxHistory *int
	Install    InstallOptions
	Upgrade    UpgradeOptions
	Rollback   RollbackOptions
	Uninstall  UninstallOptions
	Test       TestOptions
	// Policy decides tests, retries and remediation between actions.
	Policy Policy
	// PostRender is what changes the rendered manifest before it is applied.
	PostRender PostRender
}

// WaitOptions are what every action that writes objects shares: how long it
// may take, and whether it waits for them and runs hooks.
type WaitOptions struct {
	// Timeout is the action's own; zero is Actions.Timeout.
	Timeout            time.Duration
	DisableWait        bool
	DisableWaitForJobs bool
	DisableHooks       bool
}

// InstallOptions are how an install runs.
type InstallOptions struct {
	WaitOptions
	DisableOpenAPIValidation bool
	DisableSchemaValidation  bool
	Replace                  bool
	CreateNamespace          bool
	// DisableTakeOwnership refuses to install over objects that exist and
	// belong to no release.
	DisableTakeOwnership bool
	// CRDs is how the chart's crds/ are applied: kraanv1.CRDsSkip,
	// CRDsCreate or CRDsCreateReplace; empty is CRDsCreate.
	CRDs string
}

// UpgradeOptions are how an upgrade runs.
type UpgradeOptions struct {
	WaitOptions
	DisableOpenAPIValidation bool
	DisableSchemaValidation  bool
	DisableTakeOwnership     bool
	// Force replaces objects (client-side applies only, see forceOf).
	Force         bool
	CleanupOnFail bool
	// PreserveValues merges the previous revision's values under the new
	// ones instead of using exactly the new ones.
	PreserveValues bool
	// CRDs is as InstallOptions.CRDs; empty is kraanv1.CRDsSkip.
	CRDs string
}

// RollbackOptions are how a rollback runs.
type RollbackOptions struct {
	WaitOptions
	Force         bool
	CleanupOnFail bool
}

// UninstallOptions are how an uninstall runs.
type UninstallOptions struct {
	Timeout      time.Duration
	DisableHooks bool
	DisableWait  bool
	KeepHistory  bool
	// DeletionPropagation is how objects are deleted; empty is background.
	DeletionPropagation string
}

// TestOptions are how the test hooks run (Policy says whether they do).
type TestOptions struct {
	Timeout time.Duration
	Filters []TestFilter
}

// TestFilter includes or excludes a test hook by name.
type TestFilter struct {
	Name    string
	Exclude bool
}

// Selected is Helm's reading of test filters: excluded names never run;
// when some names are included, only those run.
func (o TestOptions) Selected(name string) bool {
	included := false
	for _, f := range o.Filters {
		if f.Name == name && f.Exclude {
			return false
		}
		if f.Name == name && !f.Exclude {
			return true
		}
		included = included || !f.Exclude
	}
	return !included
}

// PostRender is what runs over the rendered manifest before Helm applies
// it, in Flux's order: the kustomize post-renderers, then the common
// metadata, then Request.PostRenderer. Their content is Flux's kustomize
// vocabulary, which the engine applies as it is.
type PostRender struct {
	Kustomize      []*kraanv1.KustomizePostRenderer
	CommonMetadata *kraanv1.CommonMetadata
	// FluxStrategy is the post-render strategy Flux would use for this
	// release (its default is combined): a revision Flux made is adopted
	// when it matches that rendering.
	FluxStrategy kraanv1.PostRenderStrategy
}

// timeout is the first timeout set: the action's, then the release's, then 5m.
func (a Actions) timeout(action time.Duration) time.Duration {
	switch {
	case action > 0:
		return action
	case a.Timeout > 0:
		return a.Timeout
	default:
		return defaultTimeout
	}
}

// RunTimeout is the timeout of the release's actions that set none of
// their own: Actions.Timeout, else Helm's 5m.
func (a Actions) RunTimeout() time.Duration { return a.timeout(0) }

// maxHistory is Actions.MaxHistory with its default.
func (a Actions) maxHistory() int {
	if a.MaxHistory == nil {
		return 5
	}
	return *a.MaxHistory
}

// installCRDs is InstallOptions.CRDs with its default.
func (a Actions) installCRDs() string {
	if a.Install.CRDs == "" {
		return kraanv1.CRDsCreate
	}
	return a.Install.CRDs
}

// upgradeCRDs is UpgradeOptions.CRDs with its default.
func (a Actions) upgradeCRDs() string {
	if a.Upgrade.CRDs == "" {
		return kraanv1.CRDsSkip
	}
	return a.Upgrade.CRDs
}

// SchemaValidated says whether values are checked against the chart's
// values.schema.json before the next action: not when install or upgrade
// turns the check off (Helm still checks per action, with its own flag).
func (a Actions) SchemaValidated() bool {
	return !a.Install.DisableSchemaValidation && !a.Upgrade.DisableSchemaValidation
}
