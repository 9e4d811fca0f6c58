package addonslayer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// testPodYAML is a layer test: a bare Pod annotated as the layer's test. The
// API server has no kubelet here, so each case plays the kubelet's part and
// sets the pod's phase (finishTestPod).
func testPodYAML(ns, name, command string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
		"\n  annotations:\n    " + manifest.LayerTestAnnotation + ": \"true\"\nspec:\n  restartPolicy: Never\n" +
		"  containers:\n  - name: test\n    image: busybox\n    command: [\"sh\", \"-c\", \"" + command + "\"]\n" +
		"    terminationMessagePolicy: FallbackToLogsOnError\n"
}

func (e *layerEnv) pod(g Gomega, ns, name string) *corev1.Pod {
	pod := &corev1.Pod{}
	g.Expect(e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
	return pod
}

// finishTestPod ends a test pod as the kubelet would: Succeeded, or Failed
// with the tail of its log as the termination message.
func (e *layerEnv) finishTestPod(g Gomega, ns, name string, exitCode int32, log string) {
	pod := e.pod(g, ns, name)
	pod.Status.Phase = corev1.PodSucceeded
	if exitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	now := metav1.Now()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "test", Image: "busybox", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Message: log, StartedAt: now, FinishedAt: now,
			Reason: map[bool]string{true: "Completed", false: "Error"}[exitCode == 0]},
	}}}
	g.Expect(e.c.Status().Update(context.Background(), pod)).To(Succeed())
}

// waitTestRun waits for the test pod of run version@revision and returns its UID.
func (e *layerEnv) waitTestRun(t *testing.T, ns, name, version, revision string) types.UID {
	t.Helper()
	var uid types.UID
	NewWithT(t).Eventually(func(g Gomega) {
		pod := e.pod(g, ns, name)
		g.Expect(pod.Annotations).To(HaveKeyWithValue(manifest.LayerTestRunAnnotation, manifest.LayerTestRun(version, revision)))
		g.Expect(pod.DeletionTimestamp).To(BeNil())
		uid = pod.UID
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return uid
}

func (e *layerEnv) bumpVersion(g Gomega, name, version string) {
	g.Eventually(func(g Gomega) {
		l := e.layer(g, name)
		l.Spec.Version = version
		g.Expect(e.c.Update(context.Background(), l)).To(Succeed())
	}).Should(Succeed())
}

func (e *layerEnv) testLayerTestsGateDeployed(t *testing.T) {
	g := NewWithT(t)
	art := e.setSource(t, "ltest", map[string]string{
		"l/app.yaml":  namespaceYAML("ltest") + "---\n" + helmReleaseYAML("ltest", "app"),
		"l/test.yaml": testPodYAML("ltest", "smoke", "wget -qO- http://app.ltest"),
	}, false)
	e.createLayer(t, "ltest", "ltest", "l")

	// The test waits for the rest of the layer.
	l := e.waitState(t, "ltest", kraanv1.ApplyingState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("waiting for HelmRelease ltest/app"))
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "ltest", Name: "smoke"}, &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the layer test was created before the HelmRelease was ready: %v", err)

	g.Eventually(func(g Gomega) { e.markHelmReleaseReady(g, "ltest", "app") }).Should(Succeed())
	first := e.waitTestRun(t, "ltest", "smoke", "1", art.Revision)
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "ltest")
		g.Expect(l.Status.State).To(Equal(kraanv1.ApplyingState))
		g.Expect(layerReadyMessage(l)).To(ContainSubstring("running layer test Pod ltest/smoke"))
		g.Expect(l.Status.Resources).To(ContainElement(And(HaveField("Kind", "Pod"), HaveField("Name", "smoke"))))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	g.Eventually(func(g Gomega) { e.finishTestPod(g, "ltest", "smoke", 0, "") }).Should(Succeed())
	l = e.waitState(t, "ltest", kraanv1.DeployedState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("1 layer tests passed"))

	// A new version runs the test again, although nothing else changed, and
	// the layer is Deployed at that version only when it passes again.
	e.bumpVersion(g, "ltest", "2")
	second := e.waitTestRun(t, "ltest", "smoke", "2", art.Revision)
	g.Expect(second).NotTo(Equal(first), "the test pod was not recreated for the new version")
	l = e.waitState(t, "ltest", kraanv1.ApplyingState)
	g.Expect(conditionStatus(l, kraanv1.DeployedCondition)).To(Equal(metav1.ConditionFalse))
	g.Eventually(func(g Gomega) { e.finishTestPod(g, "ltest", "smoke", 0, "") }).Should(Succeed())
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "ltest")
		g.Expect(l.Status.State).To(Equal(kraanv1.DeployedState))
		g.Expect(l.Status.Version).To(Equal("2"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func (e *layerEnv) testLayerTestFailure(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{
		"l/cm.yaml":   namespaceYAML("lfail") + "---\n" + configMapYAML("lfail", "settings", "a"),
		"l/test.yaml": testPodYAML("lfail", "e2e", "run-e2e"),
	}
	art := e.setSource(t, "lfail", files, false)
	e.createLayer(t, "lfail", "lfail", "l")
	e.waitTestRun(t, "lfail", "e2e", "1", art.Revision)

	var log []string
	for i := 1; i <= 12; i++ {
		log = append(log, fmt.Sprintf("step %02d ok", i))
	}
	log = append(log, "FAIL: GET /healthz: expected 200, got 503")
	g.Eventually(func(g Gomega) { e.finishTestPod(g, "lfail", "e2e", 1, strings.Join(log, "\n")) }).Should(Succeed())

	l := e.waitState(t, "lfail", kraanv1.FailedState)
	msg := layerReadyMessage(l)
	g.Expect(msg).To(ContainSubstring("layer test Pod lfail/e2e failed for version 1, revision " + art.Revision))
	g.Expect(msg).To(ContainSubstring("container e2e/test exited 1"))
	g.Expect(msg).To(ContainSubstring("FAIL: GET /healthz: expected 200, got 503"))
	g.Expect(msg).NotTo(ContainSubstring("step 03 ok"), "more than the tail of the output")
	g.Expect(msg).To(ContainSubstring("step 04 ok"))
	g.Expect(conditionStatus(l, kraanv1.StalledCondition)).To(Equal(metav1.ConditionTrue))
	g.Expect(conditionStatus(l, kraanv1.DeployedCondition)).To(Equal(metav1.ConditionFalse))
	g.Expect(e.configMap(g, "lfail", "settings").Data).To(HaveKeyWithValue("value", "a"), "what was deployed stays")

	// A fixed test in a new revision runs afresh and passes.
	files["l/test.yaml"] = testPodYAML("lfail", "e2e", "run-e2e --retry 3")
	fixed := e.setSource(t, "lfail", files, false)
	e.waitTestRun(t, "lfail", "e2e", "1", fixed.Revision)
	g.Eventually(func(g Gomega) { e.finishTestPod(g, "lfail", "e2e", 0, "") }).Should(Succeed())
	l = e.waitState(t, "lfail", kraanv1.DeployedState)
	g.Expect(l.Status.Revision).To(Equal(fixed.Revision))
	g.Expect(conditionStatus(l, kraanv1.StalledCondition)).To(BeEmpty(), "removed once the layer is not stalled")
}
