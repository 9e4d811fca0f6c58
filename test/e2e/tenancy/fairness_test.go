package tenancy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// TestSlowUninstalls_HoldNoWorker: issue #42, item 7. One tenant's
// releases whose uninstall waits (an object with a finalizer, a long
// spec.uninstall.timeout), as many as the operator has workers and more,
// must not keep another tenant's release from being reconciled: the waits
// run outside the workers, as installs do. Before, each held a worker for its
// whole timeout and the other release got no reconcile at all.
func TestSlowUninstalls_HoldNoWorker(t *testing.T) {
	startOperator(t, "fairness", "--concurrent=2", "--watch-label-selector=tenancy=fairness")
	ctx := context.Background()
	g := NewWithT(t)
	labels := map[string]string{"tenancy": "fairness"}
	slow := suite.NewNamespace(t, k8s, "slow")
	held := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("held"))
	g.Expect(k8s.Create(ctx, &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: slow, Name: "held"},
		Spec:       sourcev1.HelmRepositorySpec{URL: held.URL, Interval: metav1.Duration{Duration: time.Hour}},
	})).To(Succeed())
	names := []string{"held-1", "held-2", "held-3"}
	t.Cleanup(func() { releaseHeld(t, slow, names) })
	for _, name := range names {
		g.Expect(k8s.Create(ctx, &kraanv1.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: slow, Name: name, Labels: labels},
			Spec: kraanv1.HelmReleaseSpec{
				Interval: metav1.Duration{Duration: time.Hour},
				Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
					Chart: "held", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "held"},
				}},
				Uninstall: &kraanv1.Uninstall{Timeout: &metav1.Duration{Duration: 10 * time.Minute}},
			},
		})).To(Succeed())
	}
	for _, name := range names {
		expectReady(g, slow, name)
	}
	for _, name := range names {
		g.Expect(k8s.Delete(ctx, &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: slow, Name: name}})).To(Succeed())
	}
	// Their uninstalls are waiting on the ConfigMaps.
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: slow, Name: name + "-held"}, cm)).To(Succeed())
			g.Expect(cm.DeletionTimestamp).NotTo(BeNil(), name)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	other := suite.NewNamespace(t, k8s, "other")
	newRepository(t, other)
	began := time.Now()
	newRelease(t, other, "app", "", labels)
	expectReady(g, other, "app")
	t.Logf("another tenant's release was Ready %v after it was created, while %d uninstalls waited with 2 workers",
		time.Since(began).Round(100*time.Millisecond), len(names))
	for _, name := range names {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: slow, Name: name}, &kraanv1.HelmRelease{})).To(Succeed(),
			"%s is still uninstalling", name)
	}

	// Once the finalizers go, the uninstalls end and the HelmReleases go.
	releaseHeld(t, slow, names)
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: slow, Name: name}, &kraanv1.HelmRelease{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: %v", name, err)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// expectReady waits for namespace/name to be Ready.
func expectReady(g Gomega, namespace, name string) {
	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getRelease(g, namespace, name).Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), fmt.Sprintf("%s/%s is Ready", namespace, name))
}

// releaseHeld takes the finalizer off the held ConfigMaps.
func releaseHeld(t *testing.T, namespace string, names []string) {
	for _, name := range names {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name + "-held"}, cm); err != nil {
			continue
		}
		base := cm.DeepCopy()
		cm.Finalizers = nil
		if err := k8s.Patch(context.Background(), cm, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			t.Errorf("releasing ConfigMap %s/%s: %v", namespace, cm.Name, err)
		}
	}
}
