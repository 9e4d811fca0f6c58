package habitat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// tenantObjects is how many ConfigMaps and pods a tenant labels into a
// peer group in TestHabitatCache_HoldsNoTenantPayload, each of
// tenantPayload bytes.
const (
	tenantObjects = 50
	tenantPayload = 100 << 10
)

// Anyone who may create ConfigMaps and pods in a namespace may label them
// into a peer group (issue #42: 400 ConfigMaps of 1 MB took the operator
// from 254 to 698 MB). The Habitat cache holds none of their payload, and
// the peer lists still follow the pods and are rewritten when edited.
func TestHabitatCache_HoldsNoTenantPayload(t *testing.T) {
	g := NewWithT(t)
	env := startHabitatEnvWith(t, kit.ControllerOptions{MaxConcurrentReconciles: 2})
	c := env.client
	ctx := context.Background()
	ns := "tenant"
	testenv.CreateNamespace(t, c, ns)
	payload := strings.Repeat("x", tenantPayload)
	for i := range tenantObjects {
		g.Expect(c.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("blob-%02d", i),
				Labels: map[string]string{PeerGroupLabel: "ring.shop"}},
			Data: map[string]string{"blob": payload},
		})).To(Succeed())
		g.Expect(c.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%02d", i),
				Labels: map[string]string{PeerGroupLabel: "ring.shop"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
				Env: []corev1.EnvVar{{Name: "BLOB", Value: payload}}}}},
		})).To(Succeed())
	}
	// A ConfigMap named as the peer list of a group no Habitat is in.
	g.Expect(c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: PeerConfigMapName("ring.nobody"),
			Labels: map[string]string{PeerGroupLabel: "ring.nobody"}},
		Data: map[string]string{PeerWatchFileKey: payload},
	})).To(Succeed())

	web := newHabitat(ns, "web", "shop", 1)
	g.Expect(c.Create(ctx, web)).To(Succeed())
	runPod(t, c, web, "web-0", "10.0.0.2")
	peers := func(g Gomega) string {
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: PeerConfigMapName("ring.shop")}, cm)).To(Succeed())
		return cm.Data[PeerWatchFileKey]
	}
	g.Eventually(peers, habitatTimeout).Should(Equal("10.0.0.2"))

	cached := env.reconciler.Group
	var cachedBytes int
	g.Eventually(func(g Gomega) {
		cms := &corev1.ConfigMapList{}
		g.Expect(cached.List(ctx, cms, client.InNamespace(ns))).To(Succeed())
		g.Expect(cms.Items).To(HaveLen(tenantObjects + 2)) // and the peer lists, real and not
		pods := &corev1.PodList{}
		g.Expect(cached.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(tenantObjects + 1))
		cachedBytes = jsonSize(g, cms) + jsonSize(g, pods)
		for _, cm := range cms.Items {
			g.Expect(cm.Data).To(BeEmpty(), "ConfigMap %s is cached with its data", cm.Name)
			g.Expect(cm.BinaryData).To(BeEmpty())
			if strings.HasPrefix(cm.Name, "hab-peers.") {
				g.Expect(cm.Annotations).To(HaveKey(peerListDigestAnnotation), cm.Name)
			} else {
				g.Expect(cm.Annotations).To(BeEmpty(), cm.Name)
			}
		}
		for _, pod := range pods.Items {
			g.Expect(pod.Spec.Containers).To(BeEmpty(), "pod %s is cached with its spec", pod.Name)
		}
	}, habitatTimeout).Should(Succeed())
	t.Logf("Habitat cache: %d ConfigMaps and %d pods of %d KiB each hold %d KiB as JSON",
		tenantObjects, tenantObjects, tenantPayload>>10, cachedBytes>>10)
	g.Expect(cachedBytes).To(BeNumerically("<", tenantPayload), "the cache holds payload")

	// A peer list edited by hand is written again, from the digest alone.
	g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: PeerConfigMapName("ring.shop")}, cm)).To(Succeed())
		cm.Data[PeerWatchFileKey] = "10.6.6.6"
		g.Expect(c.Update(ctx, cm)).To(Succeed())
	}, habitatTimeout).Should(Succeed())
	g.Eventually(peers, habitatTimeout).Should(Equal("10.0.0.2"))

	// An unchanged list is not written again when the group's pods change
	// in ways that leave it as it is: a tenant's pod labelled into the
	// group, never Running.
	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: PeerConfigMapName("ring.shop")}, cm)).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late", Labels: map[string]string{PeerGroupLabel: "ring.shop"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	})).To(Succeed())
	g.Consistently(func(g Gomega) string {
		got := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
		return got.ResourceVersion
	}, 3*time.Second, 200*time.Millisecond).Should(Equal(cm.ResourceVersion))
	// The list still follows a pod that starts.
	runPod(t, c, web, "web-1", "10.0.0.3")
	g.Eventually(peers, habitatTimeout).Should(Equal("10.0.0.2\n10.0.0.3"))
}

// A StatefulSet is read, from the Habitat cache, for the Habitat that
// controls it only: one of a tenant named like a Habitat reports nothing.
func TestSlimStatefulSet_KeepsControllerAndReadyReplicas(t *testing.T) {
	g := NewWithT(t)
	yes := true
	h := newHabitat("ns", "web", "", 1)
	h.UID = "habitat-uid"
	in := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: map[string]string{"a": strings.Repeat("x", 1000)},
			OwnerReferences: []metav1.OwnerReference{
				{Kind: "Other", Name: "x", UID: "other"},
				{APIVersion: "habitat.kraan.io/v1alpha1", Kind: "Habitat", Name: "web", UID: h.UID, Controller: &yes},
			}},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "x"}}}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: 3, Replicas: 3},
	}
	out, err := slimStatefulSet(in)
	g.Expect(err).NotTo(HaveOccurred())
	sts := out.(*appsv1.StatefulSet)
	g.Expect(sts.Status.ReadyReplicas).To(BeEquivalentTo(3))
	g.Expect(sts.OwnerReferences).To(ConsistOf(HaveField("Controller", &yes)))
	g.Expect(sts.Annotations).To(BeEmpty())
	g.Expect(sts.Spec.Template.Spec.Containers).To(BeEmpty())
	g.Expect(controlledBy(sts, h)).To(BeTrue())
	other := h.DeepCopy()
	other.UID = "someone-else"
	g.Expect(controlledBy(sts, other)).To(BeFalse())
}

func jsonSize(g Gomega, obj any) int {
	data, err := json.Marshal(obj)
	g.Expect(err).NotTo(HaveOccurred())
	return len(data)
}
