package tenancy_test

import (
	"context"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// TestShippedDefaults_ANamespaceEditorCannotEscalate: issue #42. Under OLM
// every namespace editor may create HelmReleases. Started with the CSV's
// own arguments, the operator installs a tenant's chart binding
// cluster-admin as the tenant's namespace's default ServiceAccount, which may
// not: the release fails naming that account, and no binding exists. The
// same chart in the operator's own namespace (only cluster admins write
// there) installs as the operator.
func TestShippedDefaults_ANamespaceEditorCannotEscalate(t *testing.T) {
	// The CSV elects a leader in the namespace OLM runs it in; out of a
	// cluster that namespace is named.
	args := append(suite.CSVArgs(t), "--watch-label-selector=tenancy=shipped-defaults", "--leader-election-namespace="+leaseNamespace)
	op, err := suite.StartOperator(t.Context(), suite.OperatorProcess{
		Name: "shipped-defaults", Binary: operatorBinary, Kubeconfig: kubeconfig, Dir: t.TempDir(),
		Args: args, Env: []string{"RUNTIME_NAMESPACE=" + leaseNamespace}, Lockdown: true,
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(op.LogTail(60))
		}
	})
	ctx := context.Background()
	g := NewWithT(t)
	tenant := suite.NewNamespace(t, k8s, "tenant")
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("escalate"))
	labels := map[string]string{"tenancy": "shipped-defaults"}
	for _, ns := range []string{tenant, leaseNamespace} {
		g.Expect(k8s.Create(ctx, &sourcev1.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "escalate"},
			Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Hour}},
		})).To(Succeed())
		hr := &kraanv1.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "escalate", Labels: labels},
			Spec: kraanv1.HelmReleaseSpec{
				Interval: metav1.Duration{Duration: time.Hour},
				Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
					Chart: "escalate", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "escalate"},
				}},
			},
		}
		g.Expect(k8s.Create(ctx, hr)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), hr) })
	}
	tenantBinding := tenant + "-escalate-escalate"
	platformBinding := leaseNamespace + "-escalate-escalate"
	t.Cleanup(func() {
		for _, name := range []string{tenantBinding, platformBinding} {
			_ = k8s.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})

	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getRelease(g, tenant, "escalate").Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("system:serviceaccount:" + tenant + ":default"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getRelease(g, leaseNamespace, "escalate").Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the platform's namespace acts as the operator")
	err = k8s.Get(ctx, client.ObjectKey{Name: tenantBinding}, &rbacv1.ClusterRoleBinding{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the tenant's chart bound cluster-admin: %v", err)
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: platformBinding}, &rbacv1.ClusterRoleBinding{})).To(Succeed())
}
