package habitat_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	habitatctrl "github.com/kraan-io/kraan-operator/internal/controller/habitat"
)

// timeout covers a StatefulSet rolling five pods on kwok.
const timeout = 90 * time.Second

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	NewWithT(t).Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

func habitat(ns, name, ring, topology string, count int32) *habitatv1.Habitat {
	return &habitatv1.Habitat{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: habitatv1.HabitatSpec{
			Image: "habitat/redis:1", Count: count,
			Service: habitatv1.ServiceSpec{Name: "redis", Topology: topology, Ring: ring},
		},
	}
}

// runningIPs returns the sorted IPs of the Running pods of the Habitats named.
func runningIPs(g Gomega, ns string, names ...string) []string {
	var ips []string
	for _, name := range names {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{habitatctrl.HabitatLabel: name})).To(Succeed())
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				ips = append(ips, p.Status.PodIP)
			}
		}
	}
	slices.Sort(ips)
	return ips
}

// peerFile returns the lines of a peer group's peer-watch file.
func peerFile(g Gomega, ns, group string) []string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: habitatctrl.PeerConfigMapName(group)}, cm)).To(Succeed())
	if cm.Data[habitatctrl.PeerWatchFileKey] == "" {
		return nil
	}
	return strings.Split(cm.Data[habitatctrl.PeerWatchFileKey], "\n")
}

// statefulSetImage returns the image of a Habitat's StatefulSet.
func statefulSetImage(g Gomega, ns, name string) string {
	sts := &appsv1.StatefulSet{}
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, sts)).To(Succeed())
	return sts.Spec.Template.Spec.Containers[0].Image
}

// updateHabitat changes h's spec, retrying on conflicts: the operator writes
// the object's finalizer and status at the same time.
func updateHabitat(g Gomega, h *habitatv1.Habitat, mutate func(*habitatv1.Habitat)) {
	g.Eventually(func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(h), h); err != nil {
			return err
		}
		mutate(h)
		return k8s.Update(context.Background(), h)
	}, timeout).Should(Succeed())
}

func TestHabitat_LeaderOfThree_PeersFollowPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-leader")
	h := habitat(ns, "redis", "", habitatv1.TopologyLeader, 3)
	g.Expect(k8s.Create(ctx, h)).To(Succeed())

	// StatefulSet 3/3 and the peer list holds the pods' IPs.
	g.Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "redis"}, sts)).To(Succeed())
		g.Expect(sts.Status.ReadyReplicas).To(BeEquivalentTo(3))
		ips := runningIPs(g, ns, "redis")
		g.Expect(ips).To(HaveLen(3))
		g.Expect(peerFile(g, ns, "habitat.redis")).To(Equal(ips))
	}, timeout).Should(Succeed())

	// Delete a pod: the list drops it, then holds its replacement.
	pod := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "redis-0"}, pod)).To(Succeed())
	oldUID := pod.UID
	g.Expect(k8s.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		now := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "redis-0"}, now)).To(Succeed())
		g.Expect(now.UID).NotTo(Equal(oldUID))
		ips := runningIPs(g, ns, "redis")
		g.Expect(ips).To(HaveLen(3))
		g.Expect(peerFile(g, ns, "habitat.redis")).To(Equal(ips))
	}, timeout).Should(Succeed())

	// Scale 3 → 5 and change the image: the StatefulSet rolls.
	updateHabitat(g, h, func(h *habitatv1.Habitat) {
		h.Spec.Count = 5
		h.Spec.Image = "habitat/redis:2"
	})
	g.Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "redis"}, sts)).To(Succeed())
		g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("habitat/redis:2"))
		g.Expect(sts.Status.UpdatedReplicas).To(BeEquivalentTo(5))
		g.Expect(sts.Status.ReadyReplicas).To(BeEquivalentTo(5))
		ips := runningIPs(g, ns, "redis")
		g.Expect(ips).To(HaveLen(5))
		g.Expect(peerFile(g, ns, "habitat.redis")).To(Equal(ips))
	}, timeout).Should(Succeed())

	// Delete: everything goes, with no Warning event about the Habitat.
	g.Expect(k8s.Delete(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(h), &habitatv1.Habitat{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "redis"}, &appsv1.StatefulSet{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: habitatctrl.PeerConfigMapName("habitat.redis")}, &corev1.ConfigMap{}))).To(BeTrue())
	}, timeout).Should(Succeed())
	expectNoOperatorWarnings(t, ns)
}

func TestHabitat_Rings_SharedAndSeparatePeerLists(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-rings")
	db := habitat(ns, "db", "shop", habitatv1.TopologyStandalone, 1)
	web := habitat(ns, "web", "shop", habitatv1.TopologyStandalone, 2)
	web.Spec.Service.Bind = []habitatv1.Bind{{Name: "db", Service: "redis", Group: "default"}}
	web.Spec.Service.GenerateRingKey = true
	other := habitat(ns, "other", "elsewhere", habitatv1.TopologyStandalone, 1)
	for _, h := range []*habitatv1.Habitat{db, web, other} {
		g.Expect(k8s.Create(ctx, h)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		shop := runningIPs(g, ns, "db", "web")
		g.Expect(shop).To(HaveLen(3))
		g.Expect(peerFile(g, ns, "ring.shop")).To(Equal(shop))
		elsewhere := runningIPs(g, ns, "other")
		g.Expect(elsewhere).To(HaveLen(1))
		g.Expect(peerFile(g, ns, "ring.elsewhere")).To(Equal(elsewhere))
	}, timeout).Should(Succeed())

	// The generated ring key stays the same across an upgrade.
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: ns, Name: habitatctrl.GeneratedRingKeySecretName("shop")}
	g.Eventually(func() error { return k8s.Get(ctx, key, secret) }, timeout).Should(Succeed())
	before := secret.Data
	updateHabitat(g, web, func(h *habitatv1.Habitat) { h.Spec.Image = "habitat/redis:2" })
	g.Eventually(func(g Gomega) string {
		return statefulSetImage(g, ns, "web")
	}, timeout).Should(Equal("habitat/redis:2"))
	g.Expect(k8s.Get(ctx, key, secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(before))

	for _, h := range []*habitatv1.Habitat{db, web, other} {
		g.Expect(k8s.Delete(ctx, h)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, name := range []string{habitatctrl.PeerConfigMapName("ring.shop"), habitatctrl.PeerConfigMapName("ring.elsewhere")} {
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.ConfigMap{}))).To(BeTrue())
		}
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &corev1.Secret{}))).To(BeTrue())
	}, timeout).Should(Succeed())
	expectNoOperatorWarnings(t, ns)
}

// expectNoOperatorWarnings fails on a Warning event about a Habitat or its
// peer list (Habitat operator issues "ConfigMap not found error" and "Errors
// when deleting Habitat resource").
func expectNoOperatorWarnings(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	for _, e := range events.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		about := e.InvolvedObject.Kind
		g.Expect(about == "Habitat" || about == "ConfigMap" || about == "Secret").To(BeFalse(),
			"Warning %s on %s %s: %s", e.Reason, about, e.InvolvedObject.Name, e.Message)
	}
}
