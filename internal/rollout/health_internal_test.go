package rollout

import (
	"context"
	"errors"
	"strings"
	"testing"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func widget(status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "generation": int64(2)},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func compileOne(t *testing.T, e HealthCheckExpr) *healthCheck {
	t.Helper()
	e.APIVersion, e.Kind = "example.io/v1", "Widget"
	checks, err := compileHealthChecks([]HealthCheckExpr{e})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return checks.of(schema.GroupKind{Group: "example.io", Kind: "Widget"})
}

// TestHealthCheck_OrderIsInProgressFailedCurrent: as Flux, inProgress wins
// over failed, which wins over current; none true is InProgress.
func TestHealthCheck_OrderIsInProgressFailedCurrent(t *testing.T) {
	g := NewWithT(t)
	hc := compileOne(t, HealthCheckExpr{Current: "status.c", Failed: "status.f", InProgress: "status.p"})
	for _, c := range []struct {
		c, f, p bool
		want    kstatus.Status
	}{
		{true, true, true, kstatus.InProgressStatus},
		{true, true, false, kstatus.FailedStatus},
		{true, false, false, kstatus.CurrentStatus},
		{false, false, false, kstatus.InProgressStatus},
	} {
		got, _, err := hc.judge(context.Background(), widget(map[string]any{"c": c.c, "f": c.f, "p": c.p}), "Widget w")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(c.want), "%+v", c)
	}
}

// TestHealthCheck_AnUnobservedGenerationIsInProgress: whatever current says.
func TestHealthCheck_AnUnobservedGenerationIsInProgress(t *testing.T) {
	g := NewWithT(t)
	hc := compileOne(t, HealthCheckExpr{Current: "true"})
	got, msg, err := hc.judge(context.Background(), widget(map[string]any{"observedGeneration": int64(1)}), "Widget w")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(kstatus.InProgressStatus))
	g.Expect(msg).To(ContainSubstring("generation 2 not yet observed"))
}

// TestHealthCheck_AMissingFieldIsWaitedFor: the object is InProgress with
// the evaluation's error as the reason, not a failed wait: its controller
// may not have written its status yet.
func TestHealthCheck_AMissingFieldIsWaitedFor(t *testing.T) {
	g := NewWithT(t)
	hc := compileOne(t, HealthCheckExpr{Current: "status.conditions.exists(c, c.type == 'Ready')"})
	got, msg, err := hc.judge(context.Background(), widget(nil), "Widget w")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(kstatus.InProgressStatus))
	g.Expect(msg).To(And(ContainSubstring("healthCheckExprs[0].current"), ContainSubstring("status")))
}

// TestHealthCheck_ACostlyExpressionIsAnError: an expression past the cost
// limit ends the wait with a *HealthCheckError instead of burning the
// operator's CPU on every event.
func TestHealthCheck_ACostlyExpressionIsAnError(t *testing.T) {
	g := NewWithT(t)
	items := make([]any, 100)
	for i := range items {
		items[i] = int64(i)
	}
	hc := compileOne(t, HealthCheckExpr{Current: "status.items.all(a, status.items.all(b, status.items.all(c, a + b + c >= 0)))"})
	_, _, err := hc.judge(context.Background(), widget(map[string]any{"items": items}), "Widget w")
	var hcErr *HealthCheckError
	g.Expect(errors.As(err, &hcErr)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("healthCheckExprs[0].current"), ContainSubstring("Widget w"), ContainSubstring("cost")))
}

// TestHealthCheck_ANonBoolIsAnError: an expression must say yes or no.
func TestHealthCheck_ANonBoolIsAnError(t *testing.T) {
	g := NewWithT(t)
	hc := compileOne(t, HealthCheckExpr{Current: "status.phase"})
	_, _, err := hc.judge(context.Background(), widget(map[string]any{"phase": "Ready"}), "Widget w")
	g.Expect(err).To(MatchError(ContainSubstring("not a bool")))
}

// TestCompileHealthChecks_Errors: what cannot judge is refused before any
// wait, naming the expression.
func TestCompileHealthChecks_Errors(t *testing.T) {
	for name, c := range map[string]struct {
		exprs []HealthCheckExpr
		want  string
	}{
		"syntax":   {[]HealthCheckExpr{{APIVersion: "example.io/v1", Kind: "Widget", Current: "status.ready =="}}, "healthCheckExprs[0].current"},
		"failed":   {[]HealthCheckExpr{{APIVersion: "example.io/v1", Kind: "Widget", Current: "true", Failed: "status.("}}, "healthCheckExprs[0].failed"},
		"required": {[]HealthCheckExpr{{APIVersion: "example.io/v1", Kind: "Widget"}}, "healthCheckExprs[0].current: required"},
		"too long": {[]HealthCheckExpr{{APIVersion: "example.io/v1", Kind: "Widget", Current: strings.Repeat("true && ", MaxExprLength/8) + "true"}}, "size exceeds limit"},
		"twice": {[]HealthCheckExpr{
			{APIVersion: "example.io/v1", Kind: "Widget", Current: "true"},
			{APIVersion: "example.io/v2", Kind: "Widget", Current: "true"},
		}, "healthCheckExprs[1]: a second health check for Widget.example.io"},
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidateHealthCheckExprs(c.exprs)
			var hcErr *HealthCheckError
			NewWithT(t).Expect(errors.As(err, &hcErr)).To(BeTrue(), "%v", err)
			NewWithT(t).Expect(err.Error()).To(ContainSubstring(c.want))
		})
	}
}

// TestHealthChecks_AKindWinsOverItsGroup: an expression with no Kind
// judges every kind of its group, but one for the kind wins.
func TestHealthChecks_AKindWinsOverItsGroup(t *testing.T) {
	g := NewWithT(t)
	checks, err := compileHealthChecks([]HealthCheckExpr{
		{APIVersion: "example.io/v1", Current: "false"},
		{APIVersion: "example.io/v1", Kind: "Widget", Current: "true"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(checks.of(schema.GroupKind{Group: "example.io", Kind: "Widget"}).steps[0].source).To(Equal("true"))
	g.Expect(checks.of(schema.GroupKind{Group: "example.io", Kind: "Gadget"}).steps[0].source).To(Equal("false"))
	g.Expect(checks.of(schema.GroupKind{Group: "other.io", Kind: "Widget"})).To(BeNil())
}
