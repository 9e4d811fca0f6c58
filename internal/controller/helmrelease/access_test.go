package helmrelease

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/tenancy"
)

func TestCrossNamespaceRef(t *testing.T) {
	release := func(change func(*kraanv1.HelmRelease)) *kraanv1.HelmRelease {
		hr := &kraanv1.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"},
			Spec: kraanv1.HelmReleaseSpec{Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart: "app", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}}},
		}
		change(hr)
		return hr
	}
	tests := []struct {
		name             string
		hr               *kraanv1.HelmRelease
		field, namespace string
	}{
		{name: "same namespace, implicit", hr: release(func(*kraanv1.HelmRelease) {})},
		{name: "same namespace, explicit", hr: release(func(hr *kraanv1.HelmRelease) {
			hr.Spec.Chart.Spec.SourceRef.Namespace = "team-a"
			hr.Spec.DependsOn = []kraanv1.DependencyReference{{Name: "db", Namespace: "team-a"}}
		})},
		{name: "chart source elsewhere", hr: release(func(hr *kraanv1.HelmRelease) {
			hr.Spec.Chart.Spec.SourceRef.Namespace = "flux-system"
		}), field: "spec.chart.spec.sourceRef.namespace", namespace: "flux-system"},
		{name: "chartRef elsewhere", hr: release(func(hr *kraanv1.HelmRelease) {
			hr.Spec.Chart = nil
			hr.Spec.ChartRef = &kraanv1.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "app", Namespace: "team-b"}
		}), field: "spec.chartRef.namespace", namespace: "team-b"},
		{name: "second dependency elsewhere", hr: release(func(hr *kraanv1.HelmRelease) {
			hr.Spec.DependsOn = []kraanv1.DependencyReference{{Name: "db"}, {Name: "cache", Namespace: "team-b"}}
		}), field: "spec.dependsOn[1].namespace", namespace: "team-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, namespace := crossNamespaceRef(tt.hr)
			NewWithT(t).Expect([]string{field, namespace}).To(Equal([]string{tt.field, tt.namespace}))
		})
	}
}

// TestTenantReadsAcross: a tenant's readyExpr may read only HelmReleases of
// its own namespace, whatever --no-cross-namespace-refs says: an expression
// is an oracle over every field of what it reads. A platform release (acting
// as the operator) may read any; a plain dependency in another namespace is
// --no-cross-namespace-refs' business.
func TestTenantReadsAcross(t *testing.T) {
	hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"},
		Spec: kraanv1.HelmReleaseSpec{DependsOn: []kraanv1.DependencyReference{
			{Name: "db"},
			{Name: "db", Namespace: "team-a", ReadyExpr: "dep.status.observedGeneration > 0"},
			{Name: "cache", Namespace: "team-b"},
			{Name: "secrets", Namespace: "team-b", ReadyExpr: "dep.spec.values.password == 'guess'"},
		}}}
	g := NewWithT(t)
	g.Expect(tenantReadsAcross(hr, tenancy.Identity{ServiceAccount: "default"})).To(Equal("spec.dependsOn[3].readyExpr"))
	g.Expect(tenantReadsAcross(hr, tenancy.Identity{})).To(BeEmpty(), "a platform release")
	hr.Spec.DependsOn = hr.Spec.DependsOn[:3]
	g.Expect(tenantReadsAcross(hr, tenancy.Identity{ServiceAccount: "default"})).To(BeEmpty())
}
