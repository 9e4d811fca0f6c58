package helmrelease

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// A release asking to be reconciled, or retried, more often than the
// operator's minimum gets the minimum (issue #42).
func TestReconciler_PeriodicRequeue_Floor(t *testing.T) {
	r := &Reconciler{floor: kit.NewIntervalFloor(30 * time.Second)}
	ctx := context.Background()
	for _, tt := range []struct {
		name            string
		interval, chart time.Duration
		want            time.Duration
	}{
		{name: "spec.interval above the floor", interval: 10 * time.Minute, want: 10 * time.Minute},
		{name: "spec.interval below the floor", interval: time.Millisecond, want: 30 * time.Second},
		{name: "the chart's interval below the floor", interval: 10 * time.Minute, chart: time.Millisecond, want: 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			hr := &kraanv1.HelmRelease{Spec: kraanv1.HelmReleaseSpec{Interval: metav1.Duration{Duration: tt.interval},
				Chart: &kraanv1.HelmChartTemplate{}}}
			if tt.chart > 0 {
				hr.Spec.Chart.Spec.Interval = &metav1.Duration{Duration: tt.chart}
			}
			g.Expect(r.periodicRequeue(ctx, hr)).To(Equal(tt.want))
		})
	}
}

func TestReconciler_WithRetryFloor(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{floor: kit.NewIntervalFloor(30 * time.Second)}
	hr := &kraanv1.HelmRelease{Spec: kraanv1.HelmReleaseSpec{
		Install: &kraanv1.Install{Strategy: &kraanv1.ActionStrategy{Name: kraanv1.StrategyRetryOnFailure,
			RetryInterval: &metav1.Duration{Duration: time.Millisecond}}},
		Upgrade: &kraanv1.Upgrade{Strategy: &kraanv1.ActionStrategy{Name: kraanv1.StrategyRetryOnFailure,
			RetryInterval: &metav1.Duration{Duration: time.Hour}}},
	}}
	spec := r.withRetryFloor(context.Background(), hr, hr.Spec.DeepCopy())
	policy := releasespec.PolicyOf(spec)
	g.Expect(policy.InstallRetryInterval).To(Equal(30 * time.Second))
	g.Expect(policy.UpgradeRetryInterval).To(Equal(time.Hour))
	g.Expect(hr.Spec.Install.Strategy.RetryInterval.Duration).To(Equal(time.Millisecond), "the object itself is not changed")

	// Unset, the strategy's default applies, as before.
	hr.Spec.Install.Strategy.RetryInterval = nil
	g.Expect(releasespec.PolicyOf(r.withRetryFloor(context.Background(), hr, hr.Spec.DeepCopy())).InstallRetryInterval).To(Equal(5 * time.Minute))
}
