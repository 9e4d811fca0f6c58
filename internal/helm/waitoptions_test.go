package helm

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// TestWatchingClient_waitOptions: the tracker gets the release's strategy,
// and its health check expressions under the poller only.
func TestWatchingClient_waitOptions(t *testing.T) {
	exprs := []rollout.HealthCheckExpr{{APIVersion: "test.kraan.io/v1", Kind: "Gizmo", Current: "true"}}
	for _, tc := range []struct {
		strategy WaitStrategy
		jobs     bool
		want     rollout.Options
	}{
		{strategy: "", want: rollout.Options{Strategy: rollout.StrategyLegacy}},
		{strategy: WaitLegacy, jobs: true, want: rollout.Options{Strategy: rollout.StrategyLegacy, FailFast: true}},
		{strategy: WaitPoller, want: rollout.Options{Strategy: rollout.StrategyPoller, HealthCheckExprs: exprs}},
		{strategy: WaitPoller, jobs: true, want: rollout.Options{Strategy: rollout.StrategyPoller, FailFast: true, HealthCheckExprs: exprs}},
	} {
		c := &watchingClient{strategy: tc.strategy, healthChecks: exprs}
		NewWithT(t).Expect(c.waitOptions(tc.jobs)).To(Equal(tc.want), "strategy %q, jobs %v", tc.strategy, tc.jobs)
	}
}
