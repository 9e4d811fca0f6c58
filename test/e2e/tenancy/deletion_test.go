package tenancy_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// TestDefaultServiceAccount_GoneDoesNotBlockDeletion: under
// --default-service-account, a tenant's releases run as the tenant's
// ServiceAccount. Once that account is gone with its rights, nobody can
// uninstall them: deleting a HelmRelease lets it go with a Warning event
// saying the release was left installed, naming the account, and deleting
// the namespace completes within the deadline instead of hanging on the
// finalizers.
func TestDefaultServiceAccount_GoneDoesNotBlockDeletion(t *testing.T) {
	startOperator(t, "default-sa", "--default-service-account=tenant", "--watch-label-selector=tenancy=default-sa")
	ctx := context.Background()
	g := NewWithT(t)
	ns := suite.NewNamespace(t, k8s, "tenant")
	newRepository(t, ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	g.Expect(k8s.Create(ctx, sa)).To(Succeed())
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	labels := map[string]string{"tenancy": "default-sa"}
	for _, name := range []string{"deleted", "left"} {
		newRelease(t, ns, name, "", labels)
		g.Eventually(func(g Gomega) {
			ready := apimeta.FindStatusCondition(getRelease(g, ns, name).Status.Conditions, kraanv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), name)
	}

	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	g.Expect(k8s.Delete(ctx, sa)).To(Succeed())
	g.Expect(k8s.Delete(ctx, &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deleted"}})).To(Succeed())
	g.Eventually(func() bool {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deleted"}, &kraanv1.HelmRelease{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the HelmRelease is deleted")
	g.Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var messages []string
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == "deleted" && ev.Reason == kraanv1.ReasonUninstallSkipped {
				messages = append(messages, ev.Message)
			}
		}
		g.Expect(messages).To(ContainElement(And(ContainSubstring("without uninstalling release "+ns+"/deleted"),
			ContainSubstring("ServiceAccount "+ns+"/tenant does not exist"))))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "deleted")).NotTo(BeEmpty(), "the release is left installed")

	g.Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "namespace %s is deleted", ns)
}
