package helmrelease

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
	"github.com/kraan-io/kraan-operator/internal/tenancy"
)

func TestReconciler_targetOf(t *testing.T) {
	release := func(spec kraanv1.HelmReleaseSpec) *kraanv1.HelmRelease {
		return &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"}, Spec: spec}
	}
	long := strings.Repeat("n", 30)
	cases := []struct {
		name            string
		defaultSA       string
		spec            kraanv1.HelmReleaseSpec
		wantRelease     string
		wantNamespace   string
		wantStorage     string
		wantImpersonate string
	}{
		{"defaults", "", kraanv1.HelmReleaseSpec{}, "app", "team", "team", ""},
		{"target namespace prefixes the name", "", kraanv1.HelmReleaseSpec{TargetNamespace: "web"}, "web-app", "web", "team", ""},
		{"storage namespace", "", kraanv1.HelmReleaseSpec{StorageNamespace: "helm"}, "app", "team", "helm", ""},
		{"release name wins", "", kraanv1.HelmReleaseSpec{ReleaseName: "mine", TargetNamespace: "web"}, "mine", "web", "team", ""},
		{"long names are shortened with a hash", "", kraanv1.HelmReleaseSpec{TargetNamespace: long + long},
			(long + long)[:40] + "-", long + long, "team", ""},
		{"service account impersonated", "", kraanv1.HelmReleaseSpec{ServiceAccountName: "deployer"},
			"app", "team", "team", "system:serviceaccount:team:deployer"},
		{"default service account locks tenants down", "restricted", kraanv1.HelmReleaseSpec{},
			"app", "team", "team", "system:serviceaccount:team:restricted"},
		{"the release's own account beats the default", "restricted", kraanv1.HelmReleaseSpec{ServiceAccountName: "deployer"},
			"app", "team", "team", "system:serviceaccount:team:deployer"},
	}
	// Under the lockdown a tenant's release acts as its namespace's
	// default account (internal/tenancy has the rest of the rules).
	locked := &Reconciler{Tenancy: tenancy.Policy{Lockdown: true}}
	NewWithT(t).Expect(locked.targetOf(release(kraanv1.HelmReleaseSpec{})).Impersonate).To(Equal("system:serviceaccount:team:default"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Reconciler{Tenancy: tenancy.Policy{ServiceAccount: tc.defaultSA}}
			target := r.targetOf(release(tc.spec))
			g.Expect(target.ReleaseName).To(HavePrefix(tc.wantRelease))
			g.Expect(len(target.ReleaseName)).To(BeNumerically("<=", 53))
			g.Expect(target.Namespace).To(Equal(tc.wantNamespace))
			g.Expect(target.StorageNamespace).To(Equal(tc.wantStorage))
			g.Expect(target.Impersonate).To(Equal(tc.wantImpersonate))
		})
	}
}

func TestRequeueInterval(t *testing.T) {
	g := NewWithT(t)
	hr := &kraanv1.HelmRelease{Spec: kraanv1.HelmReleaseSpec{
		Interval: metav1.Duration{Duration: 10 * time.Minute},
		Chart:    &kraanv1.HelmChartTemplate{},
	}}
	g.Expect(requeueInterval(hr)).To(Equal(10 * time.Minute))
	hr.Spec.Chart.Spec.Interval = &metav1.Duration{Duration: time.Minute}
	g.Expect(requeueInterval(hr)).To(Equal(time.Minute), "the chart's shorter interval")
	hr.Spec.Chart.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	g.Expect(requeueInterval(hr)).To(Equal(10 * time.Minute))
}

func TestReconciler_targetOf_persistentClient(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{}
	hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"}}
	g.Expect(r.targetOf(hr).FreshClients).To(BeFalse(), "persistent by default, as in Flux")
	hr.Spec.PersistentClient = ptr.To(false)
	g.Expect(r.targetOf(hr).FreshClients).To(BeTrue())
}

func TestChartDigestFor_ReconcileStrategy(t *testing.T) {
	g := NewWithT(t)
	hr := &kraanv1.HelmRelease{Spec: kraanv1.HelmReleaseSpec{Chart: &kraanv1.HelmChartTemplate{}}}
	g.Expect(releasespec.ChartDigestFor(hr, "sha256:c", "main@sha1:1")).To(Equal("sha256:c"), "ChartVersion: the chart's content only")
	hr.Spec.Chart.Spec.ReconcileStrategy = kraanv1.ReconcileStrategyRevision
	first, second := releasespec.ChartDigestFor(hr, "sha256:c", "main@sha1:1"), releasespec.ChartDigestFor(hr, "sha256:c", "main@sha1:2")
	g.Expect(first).NotTo(Equal(second), "Revision: a new artifact revision is a new chart")
	g.Expect(first).To(Equal(releasespec.ChartDigestFor(hr, "sha256:c", "main@sha1:1")))
	g.Expect(releasespec.ChartDigestFor(hr, "sha256:c", "")).To(Equal("sha256:c"), "a HelmRepository chart has no artifact revision")
}
