package helmrelease

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

func TestApplyMethodsOf_FluxDefaultsAndTheSpec(t *testing.T) {
	helm4, helm3 := defaults.Defaults{}, defaults.Defaults{UseHelm3: true}
	tests := []struct {
		name string
		d    defaults.Defaults
		spec kraanv1.HelmReleaseSpec
		want helm.ApplyMethods
	}{
		{"Flux v1.6 defaults", helm4, kraanv1.HelmReleaseSpec{},
			helm.ApplyMethods{Install: helm.ApplyEnabled, Upgrade: helm.ApplyAuto, Rollback: helm.ApplyAuto}},
		{"UseHelm3Defaults installs client-side", helm3, kraanv1.HelmReleaseSpec{},
			helm.ApplyMethods{Install: helm.ApplyDisabled, Upgrade: helm.ApplyAuto, Rollback: helm.ApplyAuto}},
		{"the spec wins", helm3, kraanv1.HelmReleaseSpec{
			Install:  &kraanv1.Install{ServerSideApply: ptr.To(true)},
			Upgrade:  &kraanv1.Upgrade{ServerSideApply: kraanv1.ServerSideApplyDisabled},
			Rollback: &kraanv1.Rollback{ServerSideApply: kraanv1.ServerSideApplyEnabled},
		}, helm.ApplyMethods{Install: helm.ApplyEnabled, Upgrade: helm.ApplyDisabled, Rollback: helm.ApplyEnabled}},
		{"install.serverSideApply false", helm4, kraanv1.HelmReleaseSpec{Install: &kraanv1.Install{ServerSideApply: ptr.To(false)}},
			helm.ApplyMethods{Install: helm.ApplyDisabled, Upgrade: helm.ApplyAuto, Rollback: helm.ApplyAuto}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(applyMethodsOf(tt.d, &tt.spec)).To(Equal(tt.want))
		})
	}
}
