package kit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// A selected metadata cache holds only the objects its selector picks, as
// slim metadata, while the manager's cache still sees every object of the
// kind (the chart-backed controllers' watches on what their charts render
// need them all).
func TestNewSelectedMetadataCache_HoldsOnlyTheSelected(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	mgr := testenv.NewManager(t, env.Config)
	configMaps := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	watched := labels.SelectorFromSet(labels.Set{"reconcile.fluxcd.io/watch": "Enabled"})
	selectedCache, err := kit.NewSelectedMetadataCache(mgr, "watched ConfigMaps", nil,
		map[schema.GroupVersionKind]labels.Selector{configMaps: watched})
	g.Expect(err).NotTo(HaveOccurred())
	testenv.RunManager(t, mgr)
	ctx := context.Background()
	ns := "selected"
	testenv.CreateNamespace(t, env.Client, ns)
	for name, lbls := range map[string]map[string]string{
		"values": {"reconcile.fluxcd.io/watch": "Enabled"},
		"other":  {"app": "x"},
	} {
		g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: lbls, Annotations: map[string]string{"meta.helm.sh/release-name": "r"}}})).To(Succeed())
	}

	names := func(g Gomega, c client.Reader, slim bool) []string {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, m := range list.Items {
			if slim {
				g.Expect(m.Annotations).To(BeEmpty(), "the cache kept more than the operator reads")
			}
			if m.Name != "kube-root-ca.crt" {
				out = append(out, m.Name)
			}
		}
		return out
	}
	g.Eventually(func(g Gomega) {
		g.Expect(names(g, mgr.GetCache(), false)).To(ConsistOf("values", "other"), "the manager's cache must still see every ConfigMap")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(names(g, selectedCache, true)).To(ConsistOf("values"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// Labels are kept as they are up to MaxCachedLabelBytes; an object carrying
// more keeps only those the operator's selectors read, within the bound.
func TestBoundLabels(t *testing.T) {
	g := NewWithT(t)
	ordinary := map[string]string{"owner": "helm", "name": "r", "app": "x"}
	g.Expect(kit.BoundLabels(ordinary)).To(Equal(ordinary))

	stuffed := map[string]string{"owner": "helm", "name": "r", "version": "3", "habitat.kraan.io/ring": "ring.a"}
	for i := range 20000 {
		stuffed[fmt.Sprintf("junk-%05d", i)] = strings.Repeat("x", 63)
		stuffed[fmt.Sprintf("j%05d.kraan.io/junk", i)] = strings.Repeat("y", 63) // a read prefix, in bulk
	}
	got := kit.BoundLabels(stuffed)
	size := 0
	for k, v := range got {
		size += len(k) + len(v)
	}
	g.Expect(size).To(BeNumerically("<=", kit.MaxCachedLabelBytes))
	g.Expect(got).To(HaveKeyWithValue("owner", "helm"))
	g.Expect(got).To(HaveKeyWithValue("name", "r"))
	g.Expect(got).To(HaveKeyWithValue("version", "3"))
	g.Expect(got).To(HaveKeyWithValue("habitat.kraan.io/ring", "ring.a"))
	g.Expect(got).NotTo(HaveKey("junk-00000"))
}

func TestSlimMetadata_BoundsLabels(t *testing.T) {
	g := NewWithT(t)
	labels := map[string]string{"owner": "helm"}
	for i := range 1000 {
		labels[fmt.Sprintf("junk-%04d", i)] = strings.Repeat("x", 63)
	}
	out, err := kit.SlimMetadata(nil)(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: labels}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*metav1.PartialObjectMetadata).Labels).To(Equal(map[string]string{"owner": "helm"}))
}

func TestControllerRef(t *testing.T) {
	g := NewWithT(t)
	yes, no := true, false
	refs := []metav1.OwnerReference{{Name: "a"}, {Name: "b", Controller: &no}, {Name: "c", Controller: &yes}}
	g.Expect(kit.ControllerRef(refs)).To(Equal([]metav1.OwnerReference{refs[2]}))
	g.Expect(kit.ControllerRef(refs[:2])).To(BeEmpty())
}
