package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

var poller = rollout.Options{Strategy: rollout.StrategyPoller}

var crds = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// customKind is a CRD made for one test, in a group of its own.
type customKind struct {
	crd      *apiextensionsv1.CustomResourceDefinition
	resource schema.GroupVersionResource
	kind     string
}

func (c customKind) apiVersion() string { return c.resource.GroupVersion().String() }

// object is the CRD itself, as a wait would be handed it.
func (c customKind) object() rollout.Object {
	return rollout.Object{Resource: crds, Kind: "CustomResourceDefinition", Name: c.crd.Name}
}

// newCustomKind creates a namespaced CRD of kind Widget whose objects take
// any field; with a status subresource when statusful. It is not deleted:
// the tracker's idle informers would log the missing resource until they
// stop, and the API server ends with the tests.
func newCustomKind(t *testing.T, statusful bool) customKind {
	t.Helper()
	group := fmt.Sprintf("t%d.example.io", time.Now().UnixNano())
	version := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", XPreserveUnknownFields: ptrTo(true),
		}},
	}
	if statusful {
		version.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group, Labels: helmLabels},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version},
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), crd)).To(Succeed())
	return customKind{crd: crd, resource: schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, kind: "Widget"}
}

func ptrTo[T any](v T) *T { return &v }

// newWidget creates a Widget, once its CRD is served, with spec.
func newWidget(t *testing.T, c customKind, ns, name string, spec map[string]any) rollout.Object {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": c.apiVersion(), "kind": c.kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{rollout.ManagedByLabel: rollout.ManagedByHelm}},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	var created *unstructured.Unstructured
	NewWithT(t).Eventually(func() error {
		var err error
		created, err = dynamicClient().Resource(c.resource).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
		return err
	}).WithTimeout(30*time.Second).Should(Succeed(), "the CRD is served")
	return rollout.Object{Resource: c.resource, Kind: c.kind, Namespace: ns, Name: name, Generation: created.GetGeneration()}
}

// setWidgetStatus writes a Widget's status as its controller would.
func setWidgetStatus(g Gomega, o rollout.Object, status map[string]any) {
	live, err := dynamicClient().Resource(o.Resource).Namespace(o.Namespace).Get(context.Background(), o.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	live.Object["status"] = status
	_, err = dynamicClient().Resource(o.Resource).Namespace(o.Namespace).UpdateStatus(context.Background(), live, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

func dynamicClient() dynamic.Interface { return dynamic.NewForConfigOrDie(admin) }

func readyCondition(status string) map[string]any {
	return map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": status, "reason": "Test", "message": "ready is " + status,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}}
}

// TestPoller_WaitsForADeploymentToBeAvailable: handed every object of a
// release, the poller waits for the Deployment's rollout, and the objects
// that carry no status (a Secret, a ConfigMap) are ready without a watch of
// their kind.
func TestPoller_WaitsForADeploymentToBeAvailable(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	own := rollout.NewTracker(dynamic.NewForConfigOrDie(admin))
	t.Cleanup(own.Close)
	d := newDeployment(t, ns, "web", helmLabels)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: helmLabels}}
	g.Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	objs := []rollout.Object{
		objectOf(d),
		{Resource: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Namespace: ns, Name: "web"},
		{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespace: ns, Name: "web-config"},
	}
	done := make(chan error, 1)
	go func() { done <- own.Wait(context.Background(), objs, time.Minute, poller) }()

	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "the Deployment is not available")
	g.Expect(own.Informers()).To(Equal(1), "Deployments only")
	rollOut(g, d)
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// TestPoller_ACustomResourceWithoutStatusIsReadyAtOnce: Helm 4's first
// surprise must not hang a release: a custom resource whose CRD defines no
// status is ready as soon as it is seen, and its CRD once Established.
func TestPoller_ACustomResourceWithoutStatusIsReadyAtOnce(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	widgets := newCustomKind(t, false)
	g.Expect(tracker.Wait(context.Background(), []rollout.Object{widgets.object()}, 30*time.Second, poller)).To(Succeed())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(widgets.crd), crd)).To(Succeed())
	g.Expect(established(crd)).To(BeTrue(), "the wait ended before the CRD was Established")

	w := newWidget(t, widgets, ns, "plain", map[string]any{"size": int64(1)})
	start := time.Now()
	g.Expect(tracker.Wait(context.Background(), []rollout.Object{widgets.object(), w}, 30*time.Second, poller)).To(Succeed())
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// TestPoller_ACustomResourceWithConditions: a Ready condition False is
// InProgress, and the wait ends when it turns True.
func TestPoller_ACustomResourceWithConditions(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	widgets := newCustomKind(t, true)
	w := newWidget(t, widgets, ns, "conditioned", nil)
	setWidgetStatus(g, w, readyCondition("False"))
	done := waitAsync([]rollout.Object{w}, poller)

	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "Ready is False")
	setWidgetStatus(g, w, readyCondition("True"))
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// TestPoller_ACurrentExpressionJudgesACustomField: a health check
// expression of the kind overrides kstatus (which says Current of a Widget
// with no conditions) and reads any field, nested spec included.
func TestPoller_ACurrentExpressionJudgesACustomField(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	widgets := newCustomKind(t, true)
	w := newWidget(t, widgets, ns, "sized", map[string]any{"scale": map[string]any{"replicas": int64(3)}})
	setWidgetStatus(g, w, map[string]any{"phase": "Scaling", "replicas": int64(1)})
	opts := poller
	opts.HealthCheckExprs = []rollout.HealthCheckExpr{{
		APIVersion: widgets.apiVersion(), Kind: widgets.kind,
		Current: "status.phase == 'Running' && status.replicas == spec.scale.replicas",
	}}
	done := waitAsync([]rollout.Object{w}, opts)

	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "still scaling")
	setWidgetStatus(g, w, map[string]any{"phase": "Running", "replicas": int64(3)})
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// TestPoller_AFailedExpressionFailsFast: the wait ends at once with the
// object and the expression, long before its timeout.
func TestPoller_AFailedExpressionFailsFast(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	widgets := newCustomKind(t, true)
	w := newWidget(t, widgets, ns, "doomed", nil)
	opts := poller
	opts.HealthCheckExprs = []rollout.HealthCheckExpr{{
		APIVersion: widgets.apiVersion(), Kind: widgets.kind,
		Current: "status.phase == 'Running'", Failed: "status.phase == 'Crashed'",
	}}
	done := waitAsync([]rollout.Object{w}, opts)

	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "no status yet: waited for")
	setWidgetStatus(g, w, map[string]any{"phase": "Crashed"})
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(MatchError(And(
		ContainSubstring("Widget "+ns+"/doomed failed"), ContainSubstring("status.phase == 'Crashed'")))))
}

// TestPoller_ExpressionsThatCannotJudge: one that does not compile fails the
// wait before anything is watched; one past the cost limit fails it when it
// is evaluated; both are a *HealthCheckError naming the expression. Under
// the legacy strategy expressions are not used.
func TestPoller_ExpressionsThatCannotJudge(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	widgets := newCustomKind(t, true)
	w := newWidget(t, widgets, ns, "judged", nil)
	items := make([]any, 60)
	for i := range items {
		items[i] = int64(i)
	}
	setWidgetStatus(g, w, map[string]any{"items": items})
	own := rollout.NewTracker(dynamic.NewForConfigOrDie(admin))
	t.Cleanup(own.Close)

	bad := poller
	bad.HealthCheckExprs = []rollout.HealthCheckExpr{{APIVersion: widgets.apiVersion(), Kind: widgets.kind, Current: "status.phase =="}}
	err := own.Wait(context.Background(), []rollout.Object{w}, time.Minute, bad)
	var hcErr *rollout.HealthCheckError
	g.Expect(errors.As(err, &hcErr)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("healthCheckExprs[0].current"))
	g.Expect(own.Informers()).To(BeZero(), "refused before watching")

	legacy := bad
	legacy.Strategy = rollout.StrategyLegacy
	g.Expect(own.Wait(context.Background(), []rollout.Object{w}, 10*time.Second, legacy)).To(Succeed(), "kstatus judges")

	costly := poller
	costly.HealthCheckExprs = []rollout.HealthCheckExpr{{APIVersion: widgets.apiVersion(), Kind: widgets.kind,
		Current: "status.items.all(a, status.items.all(b, status.items.all(c, a + b + c >= 0)))"}}
	start := time.Now()
	err = own.Wait(context.Background(), []rollout.Object{w}, time.Minute, costly)
	g.Expect(errors.As(err, &hcErr)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("Widget "+ns+"/judged"), ContainSubstring("cost")))
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
}

// TestPoller_AFailedObjectEndsTheWait: a Deployment past its progress
// deadline is Failed; the poller ends the wait with its message, where the
// legacy wait without jobs waits for the timeout.
func TestPoller_AFailedObjectEndsTheWait(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	d := newDeployment(t, ns, "stalled", helmLabels)
	live := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(d), live)).To(Succeed())
	live.Status = appsv1.DeploymentStatus{ObservedGeneration: live.Generation, Replicas: 1, UpdatedReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
			Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet stalled has timed out progressing."}}}
	g.Expect(k8s.Status().Update(context.Background(), live)).To(Succeed())

	err := tracker.Wait(context.Background(), []rollout.Object{objectOf(d)}, time.Second, rollout.Options{})
	var timeout *rollout.TimeoutError
	g.Expect(errors.As(err, &timeout)).To(BeTrue(), "legacy: %v", err)
	err = tracker.Wait(context.Background(), []rollout.Object{objectOf(d)}, time.Minute, poller)
	g.Expect(errors.As(err, &timeout)).To(BeFalse(), "poller: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("Deployment " + ns + "/stalled failed")))
}

// TestPoller_WithJobsAJobIsReadyWhenComplete: kstatus says Current of a Job
// that started; Helm 4's wait with jobs waits for it to complete.
func TestPoller_WithJobsAJobIsReadyWhenComplete(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: ns, Labels: helmLabels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	g.Expect(k8s.Create(context.Background(), job)).To(Succeed())
	started := metav1.Now()
	job.Status = batchv1.JobStatus{Active: 1, StartTime: &started}
	g.Expect(k8s.Status().Update(context.Background(), job)).To(Succeed())
	obj := rollout.Object{Resource: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job", Namespace: ns, Name: "migrate"}
	withJobs := poller
	withJobs.FailFast = true
	done := waitAsync([]rollout.Object{obj}, withJobs)

	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "running, not complete")
	finished := metav1.Now()
	job.Status = batchv1.JobStatus{Succeeded: 1, StartTime: &started, CompletionTime: &finished, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached"},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached"},
	}}
	g.Expect(k8s.Status().Update(context.Background(), job)).To(Succeed())
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}
