package rollout

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestEvalBool: Flux's dependsOn readyExpr over `dep` and `self`: true and
// false as the expression says; a missing field is an error to wait on; a
// syntax error, a non-bool and an expression past the cost limit are
// *HealthCheckError, which waiting does not fix.
func TestEvalBool(t *testing.T) {
	dep := map[string]any{"metadata": map[string]any{"generation": int64(3), "labels": map[string]any{"tier": "db"}},
		"status": map[string]any{"observedGeneration": int64(3)}}
	self := map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "db"}}}
	vars := map[string]any{"dep": dep, "self": self}
	g := NewWithT(t)
	ok, err := EvalBool(context.Background(), "spec.dependsOn[0].readyExpr",
		"dep.status.observedGeneration == dep.metadata.generation && dep.metadata.labels.tier == self.metadata.labels.tier", vars)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	ok, err = EvalBool(context.Background(), "f", "dep.metadata.generation > 3", vars)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())

	_, err = EvalBool(context.Background(), "f", "dep.status.ready", vars)
	g.Expect(err).To(MatchError(ContainSubstring("f: no such key: ready")))
	var hce *HealthCheckError
	g.Expect(errors.As(err, &hce)).To(BeFalse(), "a field not there yet is waited on")

	for source, want := range map[string]string{
		"dep.status.(":            "f: ",
		"dep.metadata.generation": "gives a int, not a bool",
		"[" + strings.Repeat("1,", 400) + "1].all(x, [" + strings.Repeat("1,", 400) + "1].all(y, x == y || true))": "costs more than the limit",
	} {
		_, err := EvalBool(context.Background(), "f", source, vars)
		g.Expect(errors.As(err, &hce)).To(BeTrue(), "%s: %v", source, err)
		g.Expect(err).To(MatchError(ContainSubstring(want)), source)
	}
}
