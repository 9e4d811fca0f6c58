package helm3defaults_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// Deadlines of the suite's polls, as in test/e2e/helmreleases; heldFor is how
// long a release that must stay waiting is watched (a release that does not
// wait is deployed well within it).
const (
	timeout  = 3 * time.Minute
	interval = 200 * time.Millisecond
	heldFor  = 3 * time.Second
)

// newGizmoRelease creates, in a namespace of its own served the gizmos test
// chart, a release of one Gizmo that is not Ready (its Ready condition is
// False, stored as written: the kind has no status subresource) and that a
// health check expression never finds current. It returns the namespace.
func newGizmoRelease(t *testing.T, name string, change func(*kraanv1.HelmRelease)) string {
	t.Helper()
	g := NewWithT(t)
	ns := suite.NewNamespace(t, k8s, "h3")
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("gizmos"), "0.1.0")
	g.Expect(k8s.Create(context.Background(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Minute}},
	})).To(Succeed())
	values, err := json.Marshal(map[string]any{"gizmos": []any{map[string]any{
		"name": "held", "spec": map[string]any{"size": 1},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Test"}}},
	}}})
	g.Expect(err).NotTo(HaveOccurred())
	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kraanv1.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Timeout:  &metav1.Duration{Duration: 2 * time.Minute},
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart: "gizmos", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}},
			Values: &apiextensionsv1.JSON{Raw: values},
			HealthCheckExprs: []kraanv1.CustomHealthCheck{{
				APIVersion: "test.kraan.io/v1", Kind: "Gizmo", Current: "false",
			}},
		},
	}
	if change != nil {
		change(hr)
	}
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	return ns
}

// helmRevisions lists the revisions Helm storage holds for a release.
func helmRevisions(g Gomega, namespace, release string) []string {
	secrets := &corev1.SecretList{}
	g.Expect(k8s.List(context.Background(), secrets, client.InNamespace(namespace),
		client.MatchingLabels{"owner": "helm", "name": release})).To(Succeed())
	revisions := make([]string, 0, len(secrets.Items))
	for _, s := range secrets.Items {
		revisions = append(revisions, s.Labels["version"]+"="+s.Labels["status"])
	}
	return revisions
}

// TestHelm3Defaults_ReleaseWithoutWaitStrategyWaitsLegacy: under the gate a
// release that sets no waitStrategy waits as Helm 3 did, for its workloads
// only: the custom resource that is not Ready, and the health check
// expression that never says current (used only by the poller), do not hold
// it.
func TestHelm3Defaults_ReleaseWithoutWaitStrategyWaitsLegacy(t *testing.T) {
	ns := newGizmoRelease(t, "legacy", nil)
	NewWithT(t).Eventually(func(g Gomega) {
		hr := &kraanv1.HelmRelease{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "legacy"}, hr)).To(Succeed())
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(apimeta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.ReadyCondition)).To(BeTrue())
		g.Expect(helmRevisions(g, ns, "legacy")).To(ConsistOf("1=deployed"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestHelm3Defaults_WaitStrategyInTheSpecWinsOverTheGate: a release that
// asks for the poller gets it under the gate: the same release waits.
func TestHelm3Defaults_WaitStrategyInTheSpecWinsOverTheGate(t *testing.T) {
	ns := newGizmoRelease(t, "poller", func(hr *kraanv1.HelmRelease) {
		hr.Spec.WaitStrategy = &kraanv1.WaitStrategy{Name: kraanv1.WaitStrategyPoller}
	})
	g := NewWithT(t)
	g.Eventually(func(g Gomega) []string { return helmRevisions(g, ns, "poller") }).
		WithTimeout(timeout).WithPolling(interval).Should(ConsistOf("1=pending-install"), "Helm waits")
	g.Consistently(func(g Gomega) []string { return helmRevisions(g, ns, "poller") }).
		WithTimeout(heldFor).WithPolling(interval).Should(ConsistOf("1=pending-install"), "and goes on waiting")
}
