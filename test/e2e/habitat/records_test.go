package habitat_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// habitatCondition is the Habitat's condition of type, or nil.
func habitatCondition(g Gomega, ns, name, condType string) *metav1.Condition {
	h := &habitatv1.Habitat{}
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, h)).To(Succeed())
	return apimeta.FindStatusCondition(h.Status.Conditions, condType)
}

// habitatEventReasons are the reasons of the Warning events about a Habitat.
func habitatEventReasons(g Gomega, ns, name string) []string {
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Habitat" && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// A tenant edits its Habitat's release record: an object of kube-system in
// the manifest, a pre-delete hook binding cluster-admin to its
// ServiceAccount. A Warning event says the revision was written outside the
// operator and the release is upgraded back to its chart with a revision of
// the operator's own (issue #43), deleting nothing outside; deleting the
// Habitat removes its own StatefulSet and nothing else, and runs no hook of
// the edited record.
func TestHabitat_TamperedRecord_ReplacedAndDeletesNothingOutside(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-tampered")
	h := habitat(ns, "redis", "", habitatv1.TopologyStandalone, 1)
	g.Expect(k8s.Create(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) {
		deployed := habitatCondition(g, ns, "redis", kraanv1.DeployedCondition)
		g.Expect(deployed).NotTo(BeNil())
		g.Expect(deployed.Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())

	victim, binding := ns+"-victim", ns+"-escalate"
	uid := suite.NewForeignObject(t, k8s, victim)
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: binding}})
	})
	suite.EditRecord(t, cfg, ns, "redis", func(rel *release.Release) {
		suite.AddForeignObject(rel, victim)
		suite.AddClusterAdminHook(rel, binding, ns)
	})
	// Any annotation change reconciles the object again.
	updateHabitat(g, h, func(h *habitatv1.Habitat) {
		h.Annotations = map[string]string{"e2e.kraan.io/poke": time.Now().String()}
	})

	g.Eventually(func(g Gomega) {
		g.Expect(habitatEventReasons(g, ns, "redis")).To(ContainElement(kraanv1.ReasonReleaseWrittenOutside))
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sh.helm.release.v1.redis.v2"}, &corev1.Secret{})).
			To(Succeed(), "the operator's own revision 2")
		deployed := habitatCondition(g, ns, "redis", kraanv1.DeployedCondition)
		g.Expect(deployed).NotTo(BeNil())
		g.Expect(deployed.Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	g.Expect(habitatCondition(g, ns, "redis", kraanv1.StalledCondition)).To(BeNil())
	g.Expect(suite.ForeignObjectUID(g, k8s, victim)).To(Equal(uid), "the upgrade deleted the kube-system object")

	g.Expect(k8s.Delete(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(h), &habitatv1.Habitat{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "redis"}, &appsv1.StatefulSet{}))).To(BeTrue())
	}, timeout).Should(Succeed())
	g.Expect(suite.ForeignObjectUID(g, k8s, victim)).To(Equal(uid), "the kube-system object was deleted or replaced")
	g.Expect(suite.ClusterRoleBindingExists(g, k8s, binding)).To(BeFalse(), "the record's hook ran with the operator's identity")
}

// A hand-made StatefulSet, then a Habitat of the same name: the Habitat does
// not take it over. Its condition names the StatefulSet, which keeps its UID
// and image, also after the failed install's remediation.
func TestHabitat_NameOfAHandMadeStatefulSet_IsNotTakenOver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-takeover")
	labels := map[string]string{"app": "handmade"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "example.com/handmade:1"}}},
			},
		},
	}
	g.Expect(k8s.Create(ctx, sts)).To(Succeed())
	uid := sts.UID

	g.Expect(k8s.Create(ctx, habitat(ns, "db", "", habitatv1.TopologyStandalone, 1))).To(Succeed())
	g.Eventually(func(g Gomega) {
		failed := habitatCondition(g, ns, "db", kraanv1.ReleaseFailedCondition)
		g.Expect(failed).NotTo(BeNil())
		g.Expect(failed.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(failed.Message).To(ContainSubstring(`StatefulSet "db" in namespace "` + ns + `"`))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		now := &appsv1.StatefulSet{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, now)).To(Succeed())
		g.Expect(now.UID).To(Equal(uid), "the StatefulSet was replaced")
		g.Expect(now.Spec.Template.Spec.Containers[0].Image).To(Equal("example.com/handmade:1"), "the StatefulSet was taken over")
	}, 10*time.Second, time.Second).Should(Succeed())
}
