package plugin

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWithoutOurFinalizers_KeepsOthers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
		kept       []string
		ours       bool
	}{
		{name: "none", finalizers: nil, kept: nil, ours: false},
		{name: "layer and release", finalizers: []string{"finalizers.kraan.io"}, kept: []string{}, ours: true},
		{name: "chart-backed", finalizers: []string{"kraan.io/uninstall-helm-release", "example.com/keep"}, kept: []string{"example.com/keep"}, ours: true},
		{name: "foreign only", finalizers: []string{"example.com/keep"}, kept: []string{"example.com/keep"}, ours: false},
	} {
		kept, ours := withoutOurFinalizers(tc.finalizers)
		NewWithT(t).Expect([]any{kept, ours}).To(Equal([]any{tc.kept, tc.ours}), tc.name)
	}
}

func TestOwnedCRD_GroupOrLabel(t *testing.T) {
	crd := func(group string, labels map[string]string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group}}
	}
	g := NewWithT(t)
	g.Expect(ownedCRD(crd("kraan.io", nil))).To(BeTrue())
	g.Expect(ownedCRD(crd("habitat.kraan.io", nil))).To(BeTrue())
	g.Expect(ownedCRD(crd("charts.example.com", map[string]string{operatorLabel: operatorName}))).To(BeTrue(), "a chart-backed kind of another group, labelled")
	g.Expect(ownedCRD(crd("notkraan.io", nil))).To(BeFalse())
	g.Expect(ownedCRD(crd("helm.toolkit.fluxcd.io", nil))).To(BeFalse())
}

func TestOLMOwner_OwnerReferenceOrLabels(t *testing.T) {
	g := NewWithT(t)
	byRef := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ClusterServiceVersion", Name: "kraan-operator.v0.2.0"}}}}
	byLabel := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"olm.owner": "kraan-operator.v0.1.0", "olm.owner.kind": "ClusterServiceVersion"}}}
	g.Expect(olmOwner(byRef)).To(Equal("kraan-operator.v0.2.0"))
	g.Expect(olmOwner(byLabel)).To(Equal("kraan-operator.v0.1.0"))
	g.Expect(olmOwner(&appsv1.Deployment{})).To(BeEmpty())
}

func TestStoredKind_StorageVersion(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "kraan.io", Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "AddonsLayer"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1"}, {Name: "v1beta1", Storage: true}},
	}}
	NewWithT(t).Expect(storedKind(crd)).To(Equal(schema.GroupVersionKind{Group: "kraan.io", Version: "v1beta1", Kind: "AddonsLayer"}))
}

func TestPlanRefuseOLM_NamesTheCSVAndTheOrder(t *testing.T) {
	g := NewWithT(t)
	p := &plan{deployments: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: "kraan-controller-manager",
		Labels: map[string]string{"olm.owner": "kraan-operator.v0.1.0", "olm.owner.kind": "ClusterServiceVersion"}}}}}
	err := p.refuseOLM()
	g.Expect(err).To(MatchError(And(ContainSubstring("ClusterServiceVersion kraan-operator.v0.1.0"),
		ContainSubstring("delete its Subscription and ClusterServiceVersion first"))))
	g.Expect((&plan{deployments: []appsv1.Deployment{{}}}).refuseOLM()).To(Succeed())
}
