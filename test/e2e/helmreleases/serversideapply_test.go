package helmreleases_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// The managedFields entries that tell how the operator wrote an object:
// server-side apply is an Apply operation, client-side apply an Update.
var (
	appliedServerSide = helm.FieldManager + ":" + string(metav1.ManagedFieldsOperationApply)
	appliedClientSide = helm.FieldManager + ":" + string(metav1.ManagedFieldsOperationUpdate)
)

// appManagers are the managedFields entries of the ConfigMap of the small
// chart's release "app".
func appManagers(g Gomega, namespace string) []string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "app"}, cm)).To(Succeed())
	return suite.FieldManagers(cm)
}

// applyMethodsOf waits until the release has revision, then returns the
// apply_method of every record.
func applyMethodsOf(t *testing.T, namespace, name string, revision int) map[int]string {
	t.Helper()
	var methods map[int]string
	NewWithT(t).Eventually(func(g Gomega) {
		methods = suite.ApplyMethods(t, g, cfg, namespace, name)
		g.Expect(methods).To(HaveKey(revision))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return methods
}

// upgradeTo changes the message of the release "app" and, when mode is set,
// its upgrade.serverSideApply, and waits until it is Ready at that revision.
func upgradeTo(t *testing.T, namespace, message string, mode kraanv1.ServerSideApplyMode) {
	t.Helper()
	const name = "app"
	update(t, namespace, name, func(hr *kraanv1.HelmRelease) {
		hr.Spec.Values = toJSON(map[string]any{"message": message})
		if hr.Spec.Upgrade == nil {
			hr.Spec.Upgrade = &kraanv1.Upgrade{}
		}
		hr.Spec.Upgrade.ServerSideApply = mode
	})
	readyAt(t, namespace, name)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(configMapData(g, namespace, name)).To(HaveKeyWithValue("message", message))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// A new release installs server-side by default, as Flux v1.6 does: its
// record says apply_method ssa and its objects are applied by the operator's
// field manager.
func TestHelmRelease_ServerSideApply_InstallsServerSideByDefault(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "app", "small")
	readyAt(t, ns, "app")

	g.Expect(applyMethodsOf(t, ns, "app", 1)).To(HaveKeyWithValue(1, "ssa"))
	managers := appManagers(g, ns)
	g.Expect(managers).To(ContainElement(appliedServerSide))
	g.Expect(managers).NotTo(ContainElement(appliedClientSide))
}

// install.serverSideApply: false installs client-side; upgrade auto keeps
// that; enabled switches to server-side, taking over a field another
// manager wrote since (conflicts forced) without an error; disabled goes
// back to client-side.
func TestHelmRelease_ServerSideApply_UpgradeModes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "app", "small", withValues(map[string]any{"message": "one"}), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Install = &kraanv1.Install{ServerSideApply: ptr.To(false)}
	})
	readyAt(t, ns, "app")
	g.Expect(applyMethodsOf(t, ns, "app", 1)).To(HaveKeyWithValue(1, "csa"), "install.serverSideApply: false")
	g.Expect(appManagers(g, ns)).To(And(ContainElement(appliedClientSide), Not(ContainElement(appliedServerSide))))

	upgradeTo(t, ns, "two", "")
	g.Expect(applyMethodsOf(t, ns, "app", 2)).To(HaveKeyWithValue(2, "csa"), "auto after a client-side revision")
	g.Expect(appManagers(g, ns)).NotTo(ContainElement(appliedServerSide))

	// Someone else edits a field the release sets: under server-side apply
	// that manager owns it now, and only a forced apply takes it back.
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm)).To(Succeed())
	cm.Data["message"] = "edited by hand"
	g.Expect(k8s.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

	upgradeTo(t, ns, "three", kraanv1.ServerSideApplyEnabled)
	g.Expect(applyMethodsOf(t, ns, "app", 3)).To(HaveKeyWithValue(3, "ssa"), "enabled")
	g.Expect(appManagers(g, ns)).To(ContainElement(appliedServerSide))
	g.Expect(eventReasons(g, ns, "app")).NotTo(ContainElement(kraanv1.ReasonUpgradeFailed), "the switch met a conflict")

	upgradeTo(t, ns, "four", kraanv1.ServerSideApplyDisabled)
	g.Expect(applyMethodsOf(t, ns, "app", 4)).To(HaveKeyWithValue(4, "csa"), "disabled")
	g.Expect(appManagers(g, ns)).To(ContainElement(appliedClientSide))

	upgradeTo(t, ns, "five", kraanv1.ServerSideApplyAuto)
	g.Expect(applyMethodsOf(t, ns, "app", 5)).To(HaveKeyWithValue(5, "csa"), "auto after disabled")
}

// A rollback under auto applies as the revision it rolls back to was
// applied, not as the failed newest one: a release installed server-side
// whose client-side upgrade fails is rolled back server-side.
func TestHelmRelease_ServerSideApply_RollbackFollowsTheTargetRevision(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "rt", "realistic", withValues(realisticValues(false, false)))
	readyAt(t, ns, "rt")

	update(t, ns, "rt", func(hr *kraanv1.HelmRelease) {
		hr.Spec.Values = toJSON(realisticValues(true, false))
		hr.Spec.Upgrade = &kraanv1.Upgrade{ServerSideApply: kraanv1.ServerSideApplyDisabled,
			Remediation: &kraanv1.UpgradeRemediation{RemediateLastFailure: ptr.To(true)}}
	})
	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "rt")
		remediated := condition(hr, kraanv1.RemediatedCondition)
		g.Expect(remediated).NotTo(BeNil())
		g.Expect(remediated.Reason).To(Equal(kraanv1.ReasonRollbackSucceeded))
	}).WithTimeout(2 * timeout).WithPolling(interval).Should(Succeed())

	g.Expect(applyMethodsOf(t, ns, "rt", 3)).To(Equal(map[int]string{1: "ssa", 2: "csa", 3: "ssa"}),
		"install, the failed client-side upgrade, the rollback to revision 1")
}
