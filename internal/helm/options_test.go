package helm

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// TestActions_ForceUnderEachApplyMethod: under server-side apply every
// action forces conflicts and spec's force (replace) is ignored, as in Flux
// v1.5+; Helm refuses force-replace with server-side apply, so a release
// with force: true would otherwise fail every upgrade. Under client-side
// apply force replaces and nothing forces conflicts (Helm refuses that too).
func TestActions_ForceUnderEachApplyMethod(t *testing.T) {
	ssaRecord := &release.Release{Version: 1, ApplyMethod: string(release.ApplyMethodServerSideApply)}
	csaRecord := &release.Release{Version: 1, ApplyMethod: string(release.ApplyMethodClientSideApply)}
	tests := []struct {
		name                       string
		method                     ApplyMethod
		from                       *release.Release
		force                      bool
		wantSSA                    string
		wantReplace, wantConflicts bool
	}{
		{"enabled forces conflicts", ApplyEnabled, csaRecord, false, "true", false, true},
		{"enabled ignores force", ApplyEnabled, csaRecord, true, "true", false, true},
		{"auto after ssa", ApplyAuto, ssaRecord, true, "true", false, true},
		{"auto after csa replaces on force", ApplyAuto, csaRecord, true, "false", true, false},
		{"auto after a Helm 3 record", ApplyAuto, &release.Release{Version: 1}, false, "false", false, false},
		{"disabled replaces on force", ApplyDisabled, ssaRecord, true, "false", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := Actions{Upgrade: UpgradeOptions{Force: tt.force}, Rollback: RollbackOptions{Force: tt.force}}
			apply := ApplyMethods{Upgrade: tt.method, Rollback: tt.method}
			up := newUpgrade(&action.Configuration{}, Target{}, spec, apply, tt.from, map[string]string{})
			g.Expect([]any{up.ServerSideApply, up.ForceReplace, up.ForceConflicts}).
				To(Equal([]any{tt.wantSSA, tt.wantReplace, tt.wantConflicts}), "upgrade")
			back := newRollback(&action.Configuration{}, spec, apply, tt.from)
			g.Expect([]any{back.ServerSideApply, back.ForceReplace, back.ForceConflicts}).
				To(Equal([]any{tt.wantSSA, tt.wantReplace, tt.wantConflicts}), "rollback")
		})
	}
}

// TestNewInstall_ForcesConflictsOnlyServerSide: an install that applies
// server-side takes over fields another manager holds (an object it adopts
// with takeOwnership), as Flux's does.
func TestNewInstall_ForcesConflictsOnlyServerSide(t *testing.T) {
	g := NewWithT(t)
	spec := Actions{}
	ssa := newInstall(&action.Configuration{}, Target{}, spec, ApplyMethods{Install: ApplyEnabled}, nil)
	g.Expect([]bool{ssa.ServerSideApply, ssa.ForceConflicts}).To(Equal([]bool{true, true}))
	csa := newInstall(&action.Configuration{}, Target{}, spec, ApplyMethods{Install: ApplyDisabled}, nil)
	g.Expect([]bool{csa.ServerSideApply, csa.ForceConflicts}).To(Equal([]bool{false, false}))
}
