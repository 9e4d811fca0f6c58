package helmreleases_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// heldFor is how long a test watches a release that must stay waiting: long
// enough that a release not held (a wait that did not judge the object)
// would have turned deployed, which takes well under a second.
const heldFor = 3 * time.Second

// newGizmoRepository serves the gizmos test chart (a CRD whose kind has no
// status subresource, Gizmos from values, an optional Deployment) as the
// namespace's HelmRepository "charts".
func newGizmoRepository(t *testing.T, namespace string) {
	t.Helper()
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("gizmos"), "0.1.0")
	NewWithT(t).Expect(k8s.Create(context.Background(), newHelmRepository(namespace, "charts", repo.URL))).To(Succeed())
}

// gizmo is one Gizmo of the chart's values; status, when set, is stored as
// written.
func gizmo(name string, spec, status map[string]any) map[string]any {
	g := map[string]any{"name": name, "spec": spec}
	if status != nil {
		g["status"] = status
	}
	return g
}

// readyCondition is a status whose Ready condition is status.
func readyCondition(status string) map[string]any {
	return map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": status, "reason": "Test", "message": "set by the test",
	}}}
}

func withHealthChecks(checks ...kraanv1.CustomHealthCheck) releaseOption {
	return func(hr *kraanv1.HelmRelease) { hr.Spec.HealthCheckExprs = checks }
}

func withWaitStrategy(name kraanv1.WaitStrategyName) releaseOption {
	return func(hr *kraanv1.HelmRelease) { hr.Spec.WaitStrategy = &kraanv1.WaitStrategy{Name: name} }
}

func withTimeout(d time.Duration) releaseOption {
	return func(hr *kraanv1.HelmRelease) { hr.Spec.Timeout = &metav1.Duration{Duration: d} }
}

// gizmoPhaseCheck judges Gizmos by status.phase: Done is ready, Broken
// failed.
var gizmoPhaseCheck = kraanv1.CustomHealthCheck{
	APIVersion: "test.kraan.io/v1", Kind: "Gizmo",
	Current: "status.phase == 'Done'",
	Failed:  "status.phase == 'Broken'",
}

// patchGizmo merges patch into the Gizmo, as its controller would write it.
func patchGizmo(t *testing.T, namespace, name string, patch map[string]any) {
	t.Helper()
	data, err := json.Marshal(patch)
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("test.kraan.io/v1")
	u.SetKind("Gizmo")
	u.SetNamespace(namespace)
	u.SetName(name)
	g.Expect(k8s.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, data))).To(Succeed())
}

// heldPending asserts that the release's first install waits: its revision
// becomes pending-install and stays so for heldFor.
func heldPending(t *testing.T, namespace, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) []string { return helmRevisions(g, namespace, name) }).
		WithTimeout(timeout).WithPolling(interval).Should(ConsistOf("1=pending-install"), "Helm waits")
	g.Consistently(func(g Gomega) []string { return helmRevisions(g, namespace, name) }).
		WithTimeout(heldFor).WithPolling(interval).Should(ConsistOf("1=pending-install"), "and goes on waiting")
}

// stalledWith waits until the release is Stalled with reason and returns it.
func stalledWith(t *testing.T, namespace, name, reason string) *kraanv1.HelmRelease {
	t.Helper()
	var hr *kraanv1.HelmRelease
	NewWithT(t).Eventually(func(g Gomega) {
		hr = get(g, namespace, name)
		stalled := condition(hr, kraanv1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(reason), stalled.Message)
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return hr
}

// TestWaits_PollerJudgesCustomResourcesAndStatuslessOnesDoNotHang: under the
// default strategy (poller) a release's custom resources are waited for by
// kstatus. A Gizmo whose Ready condition is False holds the install until
// its (absent) controller says Ready, while a Gizmo with no status at all,
// of a kind with no status subresource, is ready as soon as it exists: CRDs
// without a Ready condition do not hang a release. Helm 3's legacy wait
// looks at no custom resource and deploys at once.
func TestWaits_PollerJudgesCustomResourcesAndStatuslessOnesDoNotHang(t *testing.T) {
	ns := newNamespace(t)
	newGizmoRepository(t, ns)
	newRelease(t, ns, "crs", "gizmos", withValues(map[string]any{"gizmos": []any{
		gizmo("plain", map[string]any{"size": 1}, nil),
		gizmo("held", map[string]any{"size": 2}, readyCondition("False")),
	}}))
	heldPending(t, ns, "crs")

	patchGizmo(t, ns, "held", map[string]any{"status": readyCondition("True")})
	hr := readyAt(t, ns, "crs")
	NewWithT(t).Expect(condition(hr, kraanv1.ReleasedCondition).Reason).To(Equal(kraanv1.ReasonInstallSucceeded))
}

// TestWaits_HealthCheckExprCurrentHoldsUntilTheFieldIsSet: a Gizmo judged by
// a healthCheckExprs entry holds the install in progress until the field its
// current expression reads is set, then the release is Ready.
func TestWaits_HealthCheckExprCurrentHoldsUntilTheFieldIsSet(t *testing.T) {
	ns := newNamespace(t)
	newGizmoRepository(t, ns)
	newRelease(t, ns, "expr", "gizmos", withHealthChecks(gizmoPhaseCheck), withValues(map[string]any{"gizmos": []any{
		gizmo("worker", map[string]any{"size": 1}, map[string]any{"phase": "Running"}),
	}}))
	heldPending(t, ns, "expr")

	patchGizmo(t, ns, "worker", map[string]any{"status": map[string]any{"phase": "Done"}})
	readyAt(t, ns, "expr")
}

// TestWaits_HealthCheckExprFailedFailsTheInstallAtOnce: a failed expression
// that is true ends the wait at once, long before the timeout, and the
// failure says which expression.
func TestWaits_HealthCheckExprFailedFailsTheInstallAtOnce(t *testing.T) {
	ns := newNamespace(t)
	newGizmoRepository(t, ns)
	newRelease(t, ns, "broken", "gizmos", withTimeout(30*time.Minute), withHealthChecks(gizmoPhaseCheck),
		withValues(map[string]any{"gizmos": []any{
			gizmo("worker", map[string]any{"size": 1}, map[string]any{"phase": "Broken"}),
		}}))
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		released := condition(get(g, ns, "broken"), kraanv1.ReleasedCondition)
		g.Expect(released).NotTo(BeNil())
		g.Expect(released.Reason).To(Equal(kraanv1.ReasonInstallFailed))
		g.Expect(released.Message).To(And(ContainSubstring("Gizmo "+ns+"/worker failed"),
			ContainSubstring("healthCheckExprs[0].failed is true: status.phase == 'Broken'")))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "broken")).To(ConsistOf("1=failed"))
}

// TestWaits_UncompilableHealthCheckExprStallsBeforeAnyAction: an expression
// that does not compile stalls the release before Helm does anything, the
// message naming the field and CEL's complaint.
func TestWaits_UncompilableHealthCheckExprStallsBeforeAnyAction(t *testing.T) {
	ns := newNamespace(t)
	newGizmoRepository(t, ns)
	newRelease(t, ns, "typo", "gizmos", withHealthChecks(kraanv1.CustomHealthCheck{
		APIVersion: "test.kraan.io/v1", Kind: "Gizmo", Current: "status.phase ==",
	}))
	hr := stalledWith(t, ns, "typo", kraanv1.ReasonInvalidCELExpression)
	g := NewWithT(t)
	g.Expect(condition(hr, kraanv1.StalledCondition).Message).To(ContainSubstring("spec.healthCheckExprs[0].current: "))
	g.Expect(condition(hr, kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(helmRevisions(g, ns, "typo")).To(BeEmpty(), "no Helm action")

	update(t, ns, "typo", func(hr *kraanv1.HelmRelease) { hr.Spec.HealthCheckExprs = nil })
	readyAt(t, ns, "typo")
}

// TestWaits_HealthCheckExprThatCannotJudgeStallsWithoutRetries: an
// expression that compiles but gives no bool cannot judge the object; the
// install fails once and the release stalls, with no remediation or retry
// (they would fail the same way until the expression changes).
func TestWaits_HealthCheckExprThatCannotJudgeStallsWithoutRetries(t *testing.T) {
	ns := newNamespace(t)
	newGizmoRepository(t, ns)
	newRelease(t, ns, "nobool", "gizmos", withHealthChecks(kraanv1.CustomHealthCheck{
		APIVersion: "test.kraan.io/v1", Kind: "Gizmo", Current: "'yes'",
	}), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Install = &kraanv1.Install{Remediation: &kraanv1.InstallRemediation{Retries: 3}}
	})
	hr := stalledWith(t, ns, "nobool", kraanv1.ReasonInvalidCELExpression)
	g := NewWithT(t)
	g.Expect(condition(hr, kraanv1.StalledCondition).Message).To(ContainSubstring("healthCheckExprs[0].current: judging Gizmo " + ns + "/plain"))
	g.Expect(condition(hr, kraanv1.ReconcilingCondition)).To(BeNil(), "nothing is retried")
	g.Expect(helmRevisions(g, ns, "nobool")).To(ConsistOf("1=failed"), "neither uninstalled nor retried")
}

// TestWaits_FailedDeploymentEndsThePollersWaitNotLegacys: a Deployment past
// its progress deadline is Failed for kstatus. Under the poller that ends the
// wait at once (the timeout is half an hour); under the legacy strategy the
// wait goes on to its timeout, as Helm 3's did (without jobs: Helm 3 failed
// fast only when it waited for jobs).
func TestWaits_FailedDeploymentEndsThePollersWaitNotLegacys(t *testing.T) {
	ns := newNamespace(t)
	newGizmoRepository(t, ns)
	stuck := withValues(map[string]any{"gizmos": []any{}, "deployment": map[string]any{
		"enabled": true, "progressDeadlineSeconds": 1,
		"nodeSelector": map[string]any{"e2e.kraan.io/no-such-node": "x"},
	}})
	noJobs := func(hr *kraanv1.HelmRelease) {
		hr.Spec.Install = &kraanv1.Install{ActionOptions: kraanv1.ActionOptions{DisableWaitForJobs: true}}
	}
	newRelease(t, ns, "poller", "gizmos", stuck, noJobs, withTimeout(30*time.Minute))
	newRelease(t, ns, "legacy", "gizmos", stuck, noJobs, withTimeout(8*time.Second), withWaitStrategy(kraanv1.WaitStrategyLegacy))

	failedWith := func(name string, parts ...string) {
		NewWithT(t).Eventually(func(g Gomega) {
			released := condition(get(g, ns, name), kraanv1.ReleasedCondition)
			g.Expect(released).NotTo(BeNil())
			g.Expect(released.Reason).To(Equal(kraanv1.ReasonInstallFailed))
			g.Expect(containsAll(released.Message, parts...)).To(BeTrue(), released.Message)
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	}
	failedWith("poller", "Deployment "+ns+"/poller failed", "Progress deadline exceeded")
	failedWith("legacy", "timed out after 8s", "Deployment "+ns+"/legacy")
}
