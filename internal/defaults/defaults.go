// Package defaults resolves the effective value of the HelmRelease fields
// Flux helm-controller v1.5 and v1.6 added for Helm 4, whose value when unset
// depends on the UseHelm3Defaults feature gate: the one place the engine asks
// "how does this release wait, apply, post-render?", so that the gate and the
// spec are read the same way everywhere.
//
// The rules are Flux v1.6's: with the gate off (the default) a new release
// gets Helm 4's behaviour — server-side apply, kstatus waits, hooks
// post-rendered with the templates —; with it on, Helm 3's. A value set in
// the spec always wins over the gate.
package defaults

import (
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// UseHelm3DefaultsGate is the feature gate's name, Flux's:
// --feature-gates=UseHelm3Defaults=true.
const UseHelm3DefaultsGate = "UseHelm3Defaults"

// CancelHealthCheckOnNewRevisionGate is Flux 2.8's gate, on by default here:
// a newer revision of a HelmRelease's spec ends the wait of the action going
// on, which then goes straight to the newer spec (see Defaults.KeepWaitOnNewRevision).
const CancelHealthCheckOnNewRevisionGate = "CancelHealthCheckOnNewRevision"

// ApplyMethodServerSide is the apply method Helm 4 records on a revision it
// applied server-side (the release record's apply_method); any other value,
// empty included, is client-side.
const ApplyMethodServerSide = "ssa"

// Defaults resolves the effective values of the new fields. The zero value
// is Flux v1.6's defaults for new objects.
type Defaults struct {
	// UseHelm3 is the UseHelm3Defaults feature gate: unset fields take Helm
	// 3's behaviour.
	UseHelm3 bool
	// KeepWaitOnNewRevision is CancelHealthCheckOnNewRevision=false: an
	// action waits for its objects until they are ready or its timeout,
	// even when the spec changed meanwhile. Off, the default, a newer
	// generation ends the wait: the revision is marked interrupted (not a
	// failure: no remediation, nothing counted) and the newer spec is
	// applied at once. It is safe because nothing is undone: no rollback,
	// no uninstall; the next revision is what the user asked for last, and
	// its own wait judges it.
	KeepWaitOnNewRevision bool
}

// WaitStrategy is spec.waitStrategy.name, or poller (legacy under the gate).
// Whether an action waits at all is its own disableWait.
func (d Defaults) WaitStrategy(spec *kraanv1.HelmReleaseSpec) kraanv1.WaitStrategyName {
	switch {
	case spec.WaitStrategy != nil && spec.WaitStrategy.Name != "":
		return spec.WaitStrategy.Name
	case d.UseHelm3:
		return kraanv1.WaitStrategyLegacy
	}
	return kraanv1.WaitStrategyPoller
}

// HealthCheckExprs are the CEL health checks that apply: spec.healthCheckExprs
// when the release waits with the poller strategy, none otherwise (Helm 3's
// legacy wait knows only its built-in kinds).
func (d Defaults) HealthCheckExprs(spec *kraanv1.HelmReleaseSpec) []kraanv1.CustomHealthCheck {
	if d.WaitStrategy(spec) != kraanv1.WaitStrategyPoller {
		return nil
	}
	return spec.HealthCheckExprs
}

// PostRenderStrategy is spec.postRenderStrategy, or combined (nohooks under
// the gate).
func (d Defaults) PostRenderStrategy(spec *kraanv1.HelmReleaseSpec) kraanv1.PostRenderStrategy {
	switch {
	case spec.PostRenderStrategy != "":
		return spec.PostRenderStrategy
	case d.UseHelm3:
		return kraanv1.PostRenderStrategyNoHooks
	}
	return kraanv1.PostRenderStrategyCombined
}

// InstallServerSideApply says whether an install applies server-side:
// spec.install.serverSideApply, or true (false under the gate).
func (d Defaults) InstallServerSideApply(spec *kraanv1.HelmReleaseSpec) bool {
	if spec.Install != nil && spec.Install.ServerSideApply != nil {
		return *spec.Install.ServerSideApply
	}
	return !d.UseHelm3
}

// UpgradeServerSideApply is spec.upgrade.serverSideApply, or auto whatever
// the gate: a release keeps the apply method it was installed with.
func (d Defaults) UpgradeServerSideApply(spec *kraanv1.HelmReleaseSpec) kraanv1.ServerSideApplyMode {
	if spec.Upgrade != nil && spec.Upgrade.ServerSideApply != "" {
		return spec.Upgrade.ServerSideApply
	}
	return kraanv1.ServerSideApplyAuto
}

// RollbackServerSideApply is spec.rollback.serverSideApply, or auto whatever
// the gate.
func (d Defaults) RollbackServerSideApply(spec *kraanv1.HelmReleaseSpec) kraanv1.ServerSideApplyMode {
	if spec.Rollback != nil && spec.Rollback.ServerSideApply != "" {
		return spec.Rollback.ServerSideApply
	}
	return kraanv1.ServerSideApplyAuto
}

// ServerSideApply resolves an upgrade's or rollback's mode: auto keeps
// lastApplyMethod, the apply method Helm recorded on the revision the action
// starts from — for an upgrade the newest revision, for a rollback the
// revision rolled back to, as Helm 4 does — ("ssa" server-side; empty or
// "csa" client-side, as on every revision Helm 3 wrote).
func ServerSideApply(mode kraanv1.ServerSideApplyMode, lastApplyMethod string) bool {
	switch mode {
	case kraanv1.ServerSideApplyEnabled:
		return true
	case kraanv1.ServerSideApplyDisabled:
		return false
	}
	return lastApplyMethod == ApplyMethodServerSide
}

// ChartNameChangeStrategy is spec.upgrade.chartNameChangeStrategy, or
// Reinstall whatever the gate.
func (d Defaults) ChartNameChangeStrategy(spec *kraanv1.HelmReleaseSpec) kraanv1.ChartNameChangeStrategy {
	if spec.Upgrade != nil && spec.Upgrade.ChartNameChangeStrategy != "" {
		return spec.Upgrade.ChartNameChangeStrategy
	}
	return kraanv1.ChartNameChangeStrategyReinstall
}
