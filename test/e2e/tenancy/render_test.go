package tenancy_test

import (
	"context"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// TestHostileTemplates_FailAloneAndBounded: issue #42, item 3. A tenant's
// charts whose templates never finish, or repeat a string into gigabytes
// (1133 MB of the operator's memory before, then an OOM kill and a crash
// loop), run in the operator's bounded render workers: each release fails
// naming the bound and its flag, the operator keeps running, and another
// tenant's release becomes Ready meanwhile.
func TestHostileTemplates_FailAloneAndBounded(t *testing.T) {
	op := startOperator(t, "render", "--render-timeout=5s", "--max-render-memory=128Mi", "--max-concurrent-renders=1",
		"--watch-label-selector=tenancy=render")
	ctx := context.Background()
	g := NewWithT(t)
	labels := map[string]string{"tenancy": "render"}
	hostile := suite.NewNamespace(t, k8s, "hostile")
	bounds := map[string]string{"neverending": "the time bound of 5s (--render-timeout)", "repeater": "the memory bound of 128Mi (--max-render-memory)"}
	for chartName := range bounds {
		repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir(chartName))
		g.Expect(k8s.Create(ctx, &sourcev1.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: hostile, Name: chartName},
			Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Hour}},
		})).To(Succeed())
		for _, name := range []string{chartName + "-1", chartName + "-2"} {
			g.Expect(k8s.Create(ctx, &kraanv1.HelmRelease{
				ObjectMeta: metav1.ObjectMeta{Namespace: hostile, Name: name, Labels: labels},
				Spec: kraanv1.HelmReleaseSpec{
					Interval: metav1.Duration{Duration: time.Hour},
					Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
						Chart: chartName, SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: chartName},
					}},
				},
			})).To(Succeed())
		}
	}
	other := suite.NewNamespace(t, k8s, "other")
	newRepository(t, other)
	newRelease(t, other, "app", "", labels)
	expectReady(g, other, "app")

	for chartName, bound := range bounds {
		for _, name := range []string{chartName + "-1", chartName + "-2"} {
			g.Eventually(func(g Gomega) {
				ready := apimeta.FindStatusCondition(getRelease(g, hostile, name).Status.Conditions, kraanv1.ReadyCondition)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Message).To(ContainSubstring(bound))
			}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), name)
		}
	}
	g.Expect(op.State()).To(BeNil(), "the operator still runs")
}
