package helmreleases_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	release "helm.sh/helm/v4/pkg/release/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// A tenant who may edit the Secrets of its namespace edits the release
// record of its HelmRelease: an object of kube-system in the manifest, a
// pre-delete hook binding cluster-admin to its ServiceAccount. The operator
// finds the record's signature broken, as it finds a revision an admin's
// helm command wrote (issue #43): a Warning event says the revision was
// written outside the operator, nothing is replayed from it, and the
// release is upgraded back to its spec with a revision of the operator's
// own — which deletes nothing the release does not own. Deleting the
// HelmRelease then uninstalls what the release owns, runs no hook of the
// edited record, and leaves the kube-system object as it was.
func TestHelmRelease_TamperedRecord_ReplacedAndDeletesNothingOutside(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "app", "small")
	readyAt(t, ns, "app")

	victim, binding := ns+"-victim", ns+"-escalate"
	uid := suite.NewForeignObject(t, k8s, victim)
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: binding}})
	})
	suite.EditRecord(t, cfg, ns, "app", func(rel *release.Release) {
		suite.AddForeignObject(rel, victim)
		suite.AddClusterAdminHook(rel, binding, ns)
	})
	// A reset request makes the operator read Helm storage (an idle resync
	// trusts the cached record labels and reads none) without upgrading.
	now := time.Now().String()
	annotate(t, ns, "app", map[string]string{"reconcile.fluxcd.io/requestedAt": now, "reconcile.fluxcd.io/resetAt": now})

	NewWithT(t).Eventually(func(g Gomega) {
		reports := eventMessages(g, ns, "app", kraanv1.ReasonReleaseWrittenOutside)
		g.Expect(reports).To(ContainElement(ContainSubstring("revision 1 (deployed) of release " + ns + "/app was written outside the operator")))
		for _, r := range reports {
			g.Expect(r).NotTo(ContainSubstring(victim), "the record's content stays out of the event")
		}
		g.Expect(helmRevisions(g, ns, "app")).To(ContainElement("2=deployed"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	readyAt(t, ns, "app")
	g.Expect(suite.ForeignObjectUID(g, k8s, victim)).To(Equal(uid), "the upgrade deleted the kube-system object")

	g.Expect(k8s.Delete(ctx, get(g, ns, "app"))).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &kraanv1.HelmRelease{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HelmRelease is still there: %v", err)
		g.Expect(helmRevisions(g, ns, "app")).To(BeEmpty())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(suite.ForeignObjectUID(g, k8s, victim)).To(Equal(uid), "the kube-system object was deleted or replaced")
	g.Expect(suite.ClusterRoleBindingExists(g, k8s, binding)).To(BeFalse(), "the record's hook ran with the operator's identity")
}

// A record without a signature (an earlier operator version or Flux wrote
// it) naming an object of kube-system: an upgrade drops that object from the
// release, and Helm deletes what the old manifest has and the new one lacks,
// but only objects that carry the release's ownership annotations.
func TestHelmRelease_UnsignedRecord_UpgradeDeletesNothingOutside(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "app", "small")
	readyAt(t, ns, "app")

	victim := ns + "-victim"
	uid := suite.NewForeignObject(t, k8s, victim)
	suite.EditRecord(t, cfg, ns, "app", func(rel *release.Release) {
		delete(rel.Labels, helm.RecordSignatureLabel)
		suite.AddForeignObject(rel, victim)
	})
	update(t, ns, "app", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(map[string]any{"message": "two"}) })

	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(configMapData(g, ns, "app")).To(HaveKeyWithValue("message", "two"))
		g.Expect(helmRevisions(g, ns, "app")).To(ContainElement("2=deployed"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	readyAt(t, ns, "app")
	g.Expect(suite.ForeignObjectUID(g, k8s, victim)).To(Equal(uid), "the upgrade deleted the kube-system object")
}

// Issue #42: a tenant copies a genuinely signed record of its own release —
// one whose chart had a pre-delete hook binding cluster-admin — as the next
// revision of a platform release that keeps its history in the tenant's
// namespace. The platform's release never replays it: deleting the platform
// HelmRelease runs no hook of the copy, so the binding is never created.
func TestHelmRelease_RecordCopiedUnderAnotherRelease_NeverReplayed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "team", "small")
	newRelease(t, ns, "ops", "small", withValues(map[string]any{"message": "ops"}))
	readyAt(t, ns, "team")
	readyAt(t, ns, "ops")

	binding := ns + "-escalate"
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: binding}})
	})
	// The tenant's record as the operator signed it (the hook as if its
	// chart had rendered it), renumbered by an upgrade to revision 2.
	update(t, ns, "team", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(map[string]any{"message": "two"}) })
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(helmRevisions(g, ns, "team")).To(ContainElement("2=deployed"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	suite.ResignRecord(t, cfg, testenv.RecordKey, ns, "team", func(rel *release.Release) {
		suite.AddClusterAdminHook(rel, binding, ns)
	})
	suite.CopyRecordSecret(t, k8s, ns, "sh.helm.release.v1.team.v2", "ops", 2)

	g.Expect(k8s.Delete(ctx, get(g, ns, "ops"))).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ops"}, &kraanv1.HelmRelease{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HelmRelease is still there: %v", err)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(suite.ClusterRoleBindingExists(g, k8s, binding)).To(BeFalse(), "the copied record's hook ran with the operator's identity")
}
