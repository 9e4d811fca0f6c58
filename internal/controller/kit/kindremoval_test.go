package kit_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// A kind is being removed while its CRD is being deleted or gone; a
// finalizer then lets go without uninstalling (issue #43). Orphan keeps the
// objects an owner had: only its own reference goes.
func TestKindBeingRemoved_AndOrphan(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	c := env.Client

	helmReleases := kraanv1.GroupVersion.WithResource("helmreleases").GroupResource()
	why, removed, err := kit.KindBeingRemoved(ctx, c, helmReleases)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeFalse(), why)
	why, removed, err = kit.KindBeingRemoved(ctx, c, schema.GroupResource{Group: "example.com", Resource: "widgets"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeTrue())
	g.Expect(why).To(ContainSubstring("widgets.example.com is gone"))

	// A HelmRelease with a finalizer holds its CRD's deletion open: the
	// CRD is being deleted meanwhile.
	hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", Finalizers: []string{"example.com/hold"}},
		Spec: kraanv1.HelmReleaseSpec{Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
			Chart: "c", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "r"}}}}}
	g.Expect(c.Create(ctx, hr)).To(Succeed())
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: helmReleases.String()}}
	g.Expect(c.Delete(ctx, crd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		why, removed, err := kit.KindBeingRemoved(ctx, c, helmReleases)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(removed).To(BeTrue())
		g.Expect(why).To(ContainSubstring("helmreleases.kraan.io is being deleted"))
	}).Should(Succeed())

	owner, other := types.UID("owner-uid"), types.UID("other-uid")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owned", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: owner},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: other},
	}}}
	g.Expect(c.Create(ctx, cm)).To(Succeed())
	ref := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owned"}}
	ref.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gone"}}
	gone.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	g.Expect(kit.Orphan(ctx, c, c, owner, []client.Object{ref, gone})).To(Succeed())
	got := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
	g.Expect(got.OwnerReferences).To(HaveLen(1))
	g.Expect(got.OwnerReferences[0].UID).To(Equal(other))
}
