package e2e

import (
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestHelmRelease_ChartRefToHelmChart: a HelmRelease whose chartRef is a
// source-controller HelmChart installs the chart source-controller packaged
// from the harness's HelmRepository, as helm-controller would.
func TestHelmRelease_ChartRefToHelmChart(t *testing.T) {
	g := NewWithT(t)
	h := startHarness(t)
	ctx := t.Context()
	g.Expect(h.c.Create(ctx, &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "small"},
		Spec: sourcev1.HelmChartSpec{
			Chart: "small", Version: "*", Interval: metav1.Duration{Duration: time.Hour},
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
		},
	})).To(Succeed())
	h.artifactOf(g, &sourcev1.HelmChart{}, "small")

	g.Expect(h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "charted"}})).To(Succeed())
	g.Expect(h.c.Create(ctx, &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "charted", Name: "app"},
		Spec: kraanv1.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			ChartRef: &kraanv1.CrossNamespaceSourceReference{Kind: kraanv1.HelmChartKind, Name: "small", Namespace: fluxNamespace},
			Values:   &apiextensionsv1.JSON{Raw: []byte(`{"message": "from a HelmChart"}`)},
		},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		hr := &kraanv1.HelmRelease{}
		g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: "charted", Name: "app"}, hr)).To(Succeed())
		ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(hr.Status.History[0].ChartName).To(Equal("small"))
	}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: "charted", Name: "app"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("message", "from a HelmChart"))
}
