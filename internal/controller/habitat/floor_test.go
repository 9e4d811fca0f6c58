package habitat

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/chartbacked"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// chartController is the name of the chart-backed controller of Habitats.
const chartController = "habitat.habitat.kraan.io-chart"

// A Habitat asking to be reconciled every millisecond (issue #42: 614 Helm
// runs in 20 s) is reconciled at the operator's minimum instead, and the
// status writes of either controller do not bring it back sooner.
func TestReconcilePeriod_RaisedToTheFloor(t *testing.T) {
	g := NewWithT(t)
	const floor = 2 * time.Second
	env := startHabitatEnvWith(t, kit.ControllerOptions{MaxConcurrentReconciles: 2, MinReconcileInterval: floor})
	c := env.client
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "eager")
	h := newHabitat("eager", "eager", "", 1)
	h.Annotations = map[string]string{chartbacked.AnnotationReconcilePeriod: "1ms"}
	g.Expect(c.Create(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		got := &habitatv1.Habitat{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
		return apimeta.IsStatusConditionTrue(got.Status.Conditions, "Ready")
	}, habitatTimeout).Should(BeTrue())

	// Over a window of 3 floors: one reconcile per floor, and a few for
	// the events of the first install settling.
	const window = 3 * floor
	start := reconciles(g, chartController)
	g.Consistently(func(g Gomega) float64 {
		return reconciles(g, chartController) - start
	}, window, 100*time.Millisecond).Should(BeNumerically("<=", 6))
	got := reconciles(g, chartController) - start
	t.Logf("%s: %.0f reconciles in %s with reconcile-period 1ms and a floor of %s", chartController, got, window, floor)
	// Still periodic: the floor, not the watch's 10m.
	g.Expect(got).To(BeNumerically(">=", 2))
}

// reconciles is controller-runtime's count of the reconciles of controller,
// whatever their result.
func reconciles(g Gomega, controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
