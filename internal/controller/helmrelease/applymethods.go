package helmrelease

import (
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// applyMethodsOf is how the engine writes spec's objects, as Flux v1.6 does:
// spec.install.serverSideApply (server-side unless UseHelm3Defaults), and
// spec.upgrade/rollback.serverSideApply (auto: the method of the revision
// the action starts from). The engine forces conflicts under server-side
// apply and ignores spec.upgrade/rollback.force there.
func applyMethodsOf(d defaults.Defaults, spec *kraanv1.HelmReleaseSpec) helm.ApplyMethods {
	install := helm.ApplyDisabled
	if d.InstallServerSideApply(spec) {
		install = helm.ApplyEnabled
	}
	return helm.ApplyMethods{
		Install:  install,
		Upgrade:  applyMethodOf(d.UpgradeServerSideApply(spec)),
		Rollback: applyMethodOf(d.RollbackServerSideApply(spec)),
	}
}

// applyMethodOf is the engine's name for an upgrade's or rollback's mode.
func applyMethodOf(mode kraanv1.ServerSideApplyMode) helm.ApplyMethod {
	switch mode {
	case kraanv1.ServerSideApplyEnabled:
		return helm.ApplyEnabled
	case kraanv1.ServerSideApplyDisabled:
		return helm.ApplyDisabled
	default:
		return helm.ApplyAuto
	}
}
