package defaults

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

var (
	helm4 = Defaults{}
	helm3 = Defaults{UseHelm3: true}
)

func TestDefaults_UnsetFieldsFollowTheGate(t *testing.T) {
	spec := &kraanv1.HelmReleaseSpec{}
	tests := []struct {
		name         string
		helm4, helm3 any
		of           func(Defaults) any
	}{
		{"waitStrategy", kraanv1.WaitStrategyPoller, kraanv1.WaitStrategyLegacy,
			func(d Defaults) any { return d.WaitStrategy(spec) }},
		{"postRenderStrategy", kraanv1.PostRenderStrategyCombined, kraanv1.PostRenderStrategyNoHooks,
			func(d Defaults) any { return d.PostRenderStrategy(spec) }},
		{"install.serverSideApply", true, false,
			func(d Defaults) any { return d.InstallServerSideApply(spec) }},
		// Upgrades and rollbacks keep the release's apply method whatever
		// the gate, so a Helm 3 release is not switched to server-side.
		{"upgrade.serverSideApply", kraanv1.ServerSideApplyAuto, kraanv1.ServerSideApplyAuto,
			func(d Defaults) any { return d.UpgradeServerSideApply(spec) }},
		{"rollback.serverSideApply", kraanv1.ServerSideApplyAuto, kraanv1.ServerSideApplyAuto,
			func(d Defaults) any { return d.RollbackServerSideApply(spec) }},
		{"upgrade.chartNameChangeStrategy", kraanv1.ChartNameChangeStrategyReinstall, kraanv1.ChartNameChangeStrategyReinstall,
			func(d Defaults) any { return d.ChartNameChangeStrategy(spec) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.of(helm4)).To(Equal(tt.helm4), "Flux v1.6's default")
			g.Expect(tt.of(helm3)).To(Equal(tt.helm3), "under UseHelm3Defaults")
		})
	}
}

func TestDefaults_TheSpecWinsOverTheGate(t *testing.T) {
	spec := &kraanv1.HelmReleaseSpec{
		WaitStrategy:       &kraanv1.WaitStrategy{Name: kraanv1.WaitStrategyPoller},
		PostRenderStrategy: kraanv1.PostRenderStrategySeparate,
		Install:            &kraanv1.Install{ServerSideApply: ptr.To(true)},
		Upgrade: &kraanv1.Upgrade{ServerSideApply: kraanv1.ServerSideApplyDisabled,
			ChartNameChangeStrategy: kraanv1.ChartNameChangeStrategyInPlaceUpdate},
		Rollback: &kraanv1.Rollback{ServerSideApply: kraanv1.ServerSideApplyEnabled},
	}
	for _, d := range []Defaults{helm4, helm3} {
		g := NewWithT(t)
		g.Expect(d.WaitStrategy(spec)).To(Equal(kraanv1.WaitStrategyPoller))
		g.Expect(d.PostRenderStrategy(spec)).To(Equal(kraanv1.PostRenderStrategySeparate))
		g.Expect(d.InstallServerSideApply(spec)).To(BeTrue())
		g.Expect(d.UpgradeServerSideApply(spec)).To(Equal(kraanv1.ServerSideApplyDisabled))
		g.Expect(d.RollbackServerSideApply(spec)).To(Equal(kraanv1.ServerSideApplyEnabled))
		g.Expect(d.ChartNameChangeStrategy(spec)).To(Equal(kraanv1.ChartNameChangeStrategyInPlaceUpdate))
	}
	g := NewWithT(t)
	spec.Install.ServerSideApply = ptr.To(false)
	g.Expect(helm4.InstallServerSideApply(spec)).To(BeFalse(), "an explicit false beats Helm 4's default")
	spec.WaitStrategy.Name = kraanv1.WaitStrategyLegacy
	g.Expect(helm4.WaitStrategy(spec)).To(Equal(kraanv1.WaitStrategyLegacy))
}

func TestDefaults_HealthCheckExprsOnlyWithThePoller(t *testing.T) {
	g := NewWithT(t)
	exprs := []kraanv1.CustomHealthCheck{{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Current: "true"}}
	spec := &kraanv1.HelmReleaseSpec{HealthCheckExprs: exprs}
	g.Expect(helm4.HealthCheckExprs(spec)).To(Equal(exprs))
	g.Expect(helm3.HealthCheckExprs(spec)).To(BeNil(), "legacy waits know only Helm 3's kinds")
	spec.WaitStrategy = &kraanv1.WaitStrategy{Name: kraanv1.WaitStrategyPoller}
	g.Expect(helm3.HealthCheckExprs(spec)).To(Equal(exprs))
	spec.WaitStrategy.Name = kraanv1.WaitStrategyLegacy
	g.Expect(helm4.HealthCheckExprs(spec)).To(BeNil())
}

func TestServerSideApply_AutoKeepsTheRecordedMethod(t *testing.T) {
	tests := []struct {
		mode       kraanv1.ServerSideApplyMode
		lastMethod string
		want       bool
	}{
		{kraanv1.ServerSideApplyAuto, "ssa", true},
		{kraanv1.ServerSideApplyAuto, "csa", false},
		{kraanv1.ServerSideApplyAuto, "", false}, // a revision Helm 3 wrote
		{kraanv1.ServerSideApplyEnabled, "", true},
		{kraanv1.ServerSideApplyDisabled, "ssa", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+"/"+tt.lastMethod, func(t *testing.T) {
			NewWithT(t).Expect(ServerSideApply(tt.mode, tt.lastMethod)).To(Equal(tt.want))
		})
	}
}
