package helmreleases_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestHelmRelease_DriftIsWarnedThenCorrected edits a rendered Deployment by
// hand: in mode warn the release reports it and leaves it; in mode enabled the
// manifest's value is applied back.
func TestHelmRelease_DriftIsWarnedThenCorrected(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "drifty", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.DriftDetection = &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionWarn}
	})
	hr := readyAt(t, ns, "drifty")
	g.Expect(condition(hr, kraanv1.DriftedCondition).Status).To(Equal(metav1.ConditionFalse))

	g.Eventually(func(g Gomega) {
		d := deployment(g, ns, "drifty")
		d.Spec.Replicas = ptr.To[int32](3)
		g.Expect(k8s.Update(ctx, d)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	update(t, ns, "drifty", func(hr *kraanv1.HelmRelease) {
		hr.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": time.Now().String()}
	})
	g.Eventually(func(g Gomega) {
		drifted := condition(get(g, ns, "drifty"), kraanv1.DriftedCondition)
		g.Expect(drifted.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(drifted.Message).To(ContainSubstring("Deployment/" + ns + "/drifty changed at [/spec/replicas]"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(*deployment(g, ns, "drifty").Spec.Replicas).To(Equal(int32(3)), "mode warn changed the object")

	update(t, ns, "drifty", func(hr *kraanv1.HelmRelease) { hr.Spec.DriftDetection.Mode = kraanv1.DriftDetectionEnabled })
	g.Eventually(func(g Gomega) {
		drifted := condition(get(g, ns, "drifty"), kraanv1.DriftedCondition)
		g.Expect(drifted.Reason).To(Equal(kraanv1.ReasonDriftCorrected))
		g.Expect(*deployment(g, ns, "drifty").Spec.Replicas).To(Equal(int32(1)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "drifty")).To(ConsistOf("1=deployed"), "correcting drift is not an upgrade")
}
