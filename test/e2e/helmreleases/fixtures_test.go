package helmreleases_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// Deadlines of the suite's polls. Installs on kwok take a few seconds; the
// deadlines leave room for a loaded CI machine.
const (
	timeout  = 3 * time.Minute
	interval = 200 * time.Millisecond
)

// newNamespace creates a namespace of its own for a test.
func newNamespace(t *testing.T) string {
	t.Helper()
	return suite.NewNamespace(t, k8s, "hr")
}

// newRepository serves the project's test charts and points a HelmRepository
// of namespace at it.
func newRepository(t *testing.T, namespace string) {
	t.Helper()
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0", "0.2.0")
	repo.Add(chartrepo.ChartDir("realistic"), "1.0.0")
	NewWithT(t).Expect(k8s.Create(context.Background(), newHelmRepository(namespace, "charts", repo.URL))).To(Succeed())
}

func newHelmRepository(namespace, name, url string) *sourcev1.HelmRepository {
	return &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       sourcev1.HelmRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Minute}},
	}
}

// releaseOption changes a HelmRelease before it is created.
type releaseOption func(*kraanv1.HelmRelease)

func withValues(values map[string]any) releaseOption {
	return func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(values) }
}

// unschedulablePods are values whose pods fit no node of the plane: a
// release that waits for them waits until its timeout.
var unschedulablePods = map[string]any{"nodeSelector": map[string]any{"e2e.kraan.io/no-such-node": "x"}}

func withVersion(version string) releaseOption {
	return func(hr *kraanv1.HelmRelease) { hr.Spec.Chart.Spec.Version = version }
}

func toJSON(values map[string]any) *apiextensionsv1.JSON {
	data, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	return &apiextensionsv1.JSON{Raw: data}
}

// newRelease creates a HelmRelease of chartName from the namespace's repository.
func newRelease(t *testing.T, namespace, name, chartName string, opts ...releaseOption) {
	t.Helper()
	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: kraanv1.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Timeout:  &metav1.Duration{Duration: 2 * time.Minute},
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart:     chartName,
				SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}},
		},
	}
	for _, opt := range opts {
		opt(hr)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), hr)).To(Succeed())
}

// get returns the HelmRelease as the API server has it now; every message
// of its conditions must be one a user can act on.
func get(g Gomega, namespace, name string) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, hr)).To(Succeed())
	for _, c := range hr.Status.Conditions {
		g.Expect(testenv.MessageProblems(c.Message)).To(Succeed(), "condition %s", c.Type)
	}
	return hr
}

// update changes the HelmRelease, retrying on conflicts with the operator.
func update(t *testing.T, namespace, name string, change func(*kraanv1.HelmRelease)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		hr := get(g, namespace, name)
		change(hr)
		g.Expect(k8s.Update(context.Background(), hr)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// condition returns the HelmRelease's condition of type, or nil.
func condition(hr *kraanv1.HelmRelease, condType string) *metav1.Condition {
	return apimeta.FindStatusCondition(hr.Status.Conditions, condType)
}

// readyAt waits until the HelmRelease is Ready at its current generation and
// returns it.
func readyAt(t *testing.T, namespace, name string) *kraanv1.HelmRelease {
	t.Helper()
	var hr *kraanv1.HelmRelease
	NewWithT(t).Eventually(func(g Gomega) {
		hr = get(g, namespace, name)
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		ready := condition(hr, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return hr
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

// deployment returns a Deployment, or fails g.
func deployment(g Gomega, namespace, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d)).To(Succeed())
	return d
}

// configMapData returns a ConfigMap's data, or fails g.
func configMapData(g Gomega, namespace, name string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, cm)).To(Succeed())
	return cm.Data
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// eventReasons are the reasons of the events of a HelmRelease.
func eventReasons(g Gomega, namespace, name string) []string {
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(namespace))).To(Succeed())
	var reasons []string
	for _, ev := range events.Items {
		if ev.InvolvedObject.Kind == "HelmRelease" && ev.InvolvedObject.Name == name {
			reasons = append(reasons, ev.Reason)
		}
	}
	return reasons
}

// eventMessages are the messages of the events of a HelmRelease with reason.
func eventMessages(g Gomega, namespace, name, reason string) []string {
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(namespace))).To(Succeed())
	var messages []string
	for _, ev := range events.Items {
		if ev.InvolvedObject.Kind == "HelmRelease" && ev.InvolvedObject.Name == name && ev.Reason == reason {
			messages = append(messages, ev.Message)
		}
	}
	return messages
}
