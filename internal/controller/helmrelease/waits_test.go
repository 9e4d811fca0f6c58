package helmrelease

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/rollout"
)

func TestWaitOf(t *testing.T) {
	check := kraanv1.CustomHealthCheck{APIVersion: "test.kraan.io/v1", Kind: "Gizmo", Current: "true", InProgress: "false", Failed: "false"}
	expr := rollout.HealthCheckExpr{APIVersion: "test.kraan.io/v1", Kind: "Gizmo", Current: "true", InProgress: "false", Failed: "false"}
	strategy := func(name kraanv1.WaitStrategyName) *kraanv1.WaitStrategy { return &kraanv1.WaitStrategy{Name: name} }
	for _, tc := range []struct {
		name      string
		helm3     bool
		spec      kraanv1.HelmReleaseSpec
		wantWait  helm.WaitStrategy
		wantExprs []rollout.HealthCheckExpr
	}{
		{name: "poller by default", wantWait: helm.WaitPoller},
		{name: "legacy under the gate", helm3: true, wantWait: helm.WaitLegacy},
		{name: "the spec's poller wins over the gate", helm3: true,
			spec:     kraanv1.HelmReleaseSpec{WaitStrategy: strategy(kraanv1.WaitStrategyPoller), HealthCheckExprs: []kraanv1.CustomHealthCheck{check}},
			wantWait: helm.WaitPoller, wantExprs: []rollout.HealthCheckExpr{expr}},
		{name: "the spec's legacy", spec: kraanv1.HelmReleaseSpec{WaitStrategy: strategy(kraanv1.WaitStrategyLegacy)}, wantWait: helm.WaitLegacy},
		{name: "expressions under the poller", spec: kraanv1.HelmReleaseSpec{HealthCheckExprs: []kraanv1.CustomHealthCheck{check}},
			wantWait: helm.WaitPoller, wantExprs: []rollout.HealthCheckExpr{expr}},
		{name: "expressions ignored under legacy",
			spec:     kraanv1.HelmReleaseSpec{WaitStrategy: strategy(kraanv1.WaitStrategyLegacy), HealthCheckExprs: []kraanv1.CustomHealthCheck{check}},
			wantWait: helm.WaitLegacy},
		{name: "expressions ignored under the gate's legacy", helm3: true,
			spec: kraanv1.HelmReleaseSpec{HealthCheckExprs: []kraanv1.CustomHealthCheck{check}}, wantWait: helm.WaitLegacy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			wait, exprs := waitOf(defaults.Defaults{UseHelm3: tc.helm3}, &tc.spec)
			g.Expect(wait).To(Equal(tc.wantWait))
			g.Expect(exprs).To(Equal(tc.wantExprs))
		})
	}
}

func TestClassifyRunError_healthCheckErrorIsTerminal(t *testing.T) {
	g := NewWithT(t)
	cause := &rollout.HealthCheckError{Field: "healthCheckExprs[0].current", Object: "Gizmo a/b", Err: errors.New("the expression gives a string, not a bool")}
	err := classifyRunError(fmt.Errorf("install of release a/b failed: %w", cause))
	var terminal *outcome.TerminalError
	g.Expect(errors.As(err, &terminal)).To(BeTrue())
	g.Expect(terminal.Reason).To(Equal(kraanv1.ReasonInvalidCELExpression))
	g.Expect(err.Error()).To(ContainSubstring("healthCheckExprs[0].current: judging Gizmo a/b"))
}
