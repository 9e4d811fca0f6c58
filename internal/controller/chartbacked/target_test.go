package chartbacked

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kraan-io/kraan-operator/internal/watches"
)

func TestReconciler_TargetOf_ImpersonatesAndConfines(t *testing.T) {
	obj := &unstructured.Unstructured{}
	obj.SetNamespace("shop")
	obj.SetName("web")
	kinds := []schema.GroupKind{{Group: "apps", Kind: "StatefulSet"}}
	for _, tc := range []struct {
		name, watchSA, defaultSA, want string
	}{
		{name: "unlocked: the operator's identity"},
		{name: "--default-service-account", defaultSA: "tenant", want: "system:serviceaccount:shop:tenant"},
		{name: "the watch's account wins", watchSA: "deployer", defaultSA: "tenant", want: "system:serviceaccount:shop:deployer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Reconciler{
				Watch:                 watches.Watch{Kind: "Habitat", ServiceAccountName: tc.watchSA, Kinds: kinds},
				DefaultServiceAccount: tc.defaultSA,
			}
			target := r.targetOf(obj)
			g.Expect(target.Impersonate).To(Equal(tc.want))
			g.Expect(target.ReleaseName).To(Equal("web"))
			g.Expect(target.Namespace).To(Equal("shop"))
			g.Expect(target.Bounds).NotTo(BeNil())
			g.Expect(target.Bounds.Namespace).To(Equal("shop"))
			g.Expect(target.Bounds.Owner).To(Equal("Habitat shop/web"))
			g.Expect(target.Bounds.Kinds).To(Equal(kinds))
			g.Expect(target.Bounds.ClusterScoped).To(BeFalse())
		})
	}
}
