package crash_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
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
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// Deadlines of the suite's polls. Recovery includes the expiry of the killed
// operator's Lease (15s), so the deadlines leave room for that and a loaded
// machine.
const (
	timeout  = 3 * time.Minute
	interval = 200 * time.Millisecond
)

// app names each test's HelmRelease, and so its Helm release and the
// chart's Deployment and ConfigMap.
const app = "app"

// releaseTimeout is the Helm timeout of the test releases: far longer than
// a test holds an operation in flight, so no wait gives up before the kill.
const releaseTimeout = 5 * time.Minute

// newNamespace creates a namespace of its own for a test.
func newNamespace(t *testing.T) string {
	t.Helper()
	return suite.NewNamespace(t, k8s, "crash")
}

// newRepository serves the small test chart and points the HelmRepository
// "charts" of namespace at it.
func newRepository(t *testing.T, namespace string) {
	t.Helper()
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	NewWithT(t).Expect(k8s.Create(context.Background(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: namespace},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Minute}},
	})).To(Succeed())
}

// newRelease creates the HelmRelease app of the small chart with values.
func newRelease(t *testing.T, namespace string, values map[string]any) {
	t.Helper()
	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: namespace},
		Spec: kraanv1.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Timeout:  &metav1.Duration{Duration: releaseTimeout},
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart:     "small",
				SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}},
			Values: toJSON(values),
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), hr)).To(Succeed())
}

func toJSON(values map[string]any) *apiextensionsv1.JSON {
	data, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	return &apiextensionsv1.JSON{Raw: data}
}

// get returns the HelmRelease app as the API server has it now.
func get(g Gomega, namespace string) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: app}, hr)).To(Succeed())
	return hr
}

// setValues replaces the values of the HelmRelease app, retrying on
// conflicts with the operator.
func setValues(t *testing.T, namespace string, values map[string]any) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		hr := get(g, namespace)
		hr.Spec.Values = toJSON(values)
		g.Expect(k8s.Update(context.Background(), hr)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// readyAt waits until the HelmRelease app is Ready for its current
// generation and returns it.
func readyAt(t *testing.T, namespace string) *kraanv1.HelmRelease {
	t.Helper()
	var hr *kraanv1.HelmRelease
	NewWithT(t).Eventually(func(g Gomega) {
		hr = get(g, namespace)
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		ready := condition(hr, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return hr
}

// condition returns the HelmRelease's condition of type, or nil.
func condition(hr *kraanv1.HelmRelease, condType string) *metav1.Condition {
	return apimeta.FindStatusCondition(hr.Status.Conditions, condType)
}

// helmRevisions returns the status of each revision Helm storage holds for
// the release app, read from the labels of its Secrets
// (sh.helm.release.v1.app.v<revision>).
func helmRevisions(g Gomega, namespace string) map[int]string {
	secrets := &corev1.SecretList{}
	g.Expect(k8s.List(context.Background(), secrets, client.InNamespace(namespace),
		client.MatchingLabels{"owner": "helm", "name": app})).To(Succeed())
	revisions := make(map[int]string, len(secrets.Items))
	for _, s := range secrets.Items {
		version, err := strconv.Atoi(s.Labels["version"])
		g.Expect(err).NotTo(HaveOccurred(), "Secret %s has no revision label", s.Name)
		g.Expect(s.Name).To(Equal(fmt.Sprintf("sh.helm.release.v1.%s.v%d", app, version)))
		revisions[version] = s.Labels["status"]
	}
	return revisions
}

// deployment returns the release's Deployment, or fails g.
func deployment(g Gomega, namespace string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: app}, d)).To(Succeed())
	return d
}

// expectRolledOut checks that the Deployment's current spec is rolled out:
// every replica updated and ready.
func expectRolledOut(g Gomega, d *appsv1.Deployment) {
	g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
	g.Expect(d.Spec.Replicas).NotTo(BeNil())
	g.Expect(d.Status.UpdatedReplicas).To(Equal(*d.Spec.Replicas))
	g.Expect(d.Status.ReadyReplicas).To(Equal(*d.Spec.Replicas))
	g.Expect(d.Status.Replicas).To(Equal(*d.Spec.Replicas), "pods of an older spec are left")
}

// configMapData returns the data of the release's ConfigMap, or fails g.
func configMapData(g Gomega, namespace string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: app}, cm)).To(Succeed())
	return cm.Data
}

// releaseEvents returns the events about the HelmRelease app.
func releaseEvents(g Gomega, namespace string) []corev1.Event {
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(namespace))).To(Succeed())
	var about []corev1.Event
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "HelmRelease" && e.InvolvedObject.Name == app {
			about = append(about, e)
		}
	}
	return about
}

// gate is a node label no node carries until the test opens it: pods that
// select it stay Pending, so Helm's wait for them holds an install or
// upgrade in flight for as long as the test needs (kwok makes scheduled pods
// Ready within a second, so a plain rollout is too quick to kill reliably).
type gate string

// newGate returns the gate of a test's namespace: tests do not open each
// other's.
func newGate(namespace string) gate { return gate("crash.kraan.io/" + namespace) }

// nodeSelector selects the gate's label, as the small chart's values.
func (gt gate) nodeSelector() map[string]any { return map[string]any{string(gt): "open"} }

// open labels the fake node, which lets the scheduler bind the gated pods.
func (gt gate) open(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: localplane.NodeName}, node)).To(Succeed())
		base := node.DeepCopy()
		node.Labels[string(gt)] = "open"
		g.Expect(k8s.Patch(context.Background(), node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
