package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// testJob is a layer test Job. Under kwok no container runs: a Job whose pod
// is bound to the kwok node completes (kwok's pod-complete stage), and a
// failing one is a pod no node matches, failed by the Job controller after
// activeDeadlineSeconds (see testdata/charts/realistic/README.md).
func testJob(name string, fail bool) string {
	const ns = "checked"
	failure := ""
	if fail {
		failure = "  activeDeadlineSeconds: 1\n"
	}
	selector := ""
	if fail {
		selector = "      nodeSelector: {kraan.io/never-scheduled: \"true\"}\n"
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
  annotations:
    %s: "true"
spec:
  backoffLimit: 0
%s  template:
    spec:
      restartPolicy: Never
%s      containers:
      - name: test
        image: curlimages/curl:8.11.0
        args: ["-fsS", "http://web.%s"]
        terminationMessagePolicy: FallbackToLogsOnError
---
`, name, ns, manifest.LayerTestAnnotation, failure, selector, ns)
}

// job returns the Job, or fails g.
func (h *harness) job(g Gomega, ns, name string) *batchv1.Job {
	j := &batchv1.Job{}
	g.Expect(h.c.Get(h.t.Context(), types.NamespacedName{Namespace: ns, Name: name}, j)).To(Succeed())
	return j
}

// waitTestRun waits for the test Job of the run version@revision and returns its UID.
func (h *harness) waitTestRun(ns, name, version, revision string) types.UID {
	var uid types.UID
	NewWithT(h.t).Eventually(func(g Gomega) {
		j := h.job(g, ns, name)
		g.Expect(j.Annotations).To(HaveKeyWithValue(manifest.LayerTestRunAnnotation, manifest.LayerTestRun(version, revision)))
		g.Expect(j.DeletionTimestamp).To(BeNil())
		uid = j.UID
	}).WithTimeout(layerTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	return uid
}

// TestLayerTests_EndToEnd: a layer's test Job runs after the layer's other
// objects are ready, gates Deployed (and so the dependent layer), fails the
// layer naming it, and runs again for a new revision and for a new version.
func TestLayerTests_EndToEnd(t *testing.T) {
	h := startHarness(t)
	g := NewWithT(t)
	h.createGitSource("ltests", "ltests")
	files := map[string]string{
		"addons/checked/all.yaml": namespace("checked") + deployment("checked", "web") + testJob("smoke", false) +
			testJob("e2e", true),
		"addons/consumer/all.yaml": configMap("checked", "consumer"),
	}
	failing := h.commitTo("ltests", "ltests", files)
	h.addLayer("checked", "ltests")
	h.addLayer("consumer", "ltests", withDependsOn("checked@0.1.0"))

	// The failing test fails the layer with its name and the Job's failure;
	// the dependent layer keeps waiting; what was deployed stays.
	failedRun := h.waitTestRun("checked", "e2e", "0.1.0", failing)
	l := h.waitLayer("checked", kraanv1.FailedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(cond(l, kraanv1.ReadyCondition).Reason).To(Equal("LayerTestFailed"))
	})
	msg := cond(l, kraanv1.ReadyCondition).Message
	g.Expect(msg).To(ContainSubstring("layer test Job checked/e2e failed for version 0.1.0, revision " + failing))
	g.Expect(msg).To(ContainSubstring("DeadlineExceeded"))
	expectConditions(g, l, map[string]metav1.ConditionStatus{
		kraanv1.StalledCondition: metav1.ConditionTrue, kraanv1.DeployedCondition: metav1.ConditionFalse})
	h.expectEvent("checked", corev1.EventTypeWarning, "LayerTestFailed", "layer test Job checked/e2e failed")
	consumer := h.layer(g, "consumer")
	g.Expect(consumer.Status.State).To(Equal(kraanv1.ApplyPendingState), "a dependent started on a layer whose test failed")

	// The tests were applied only once the Deployment was available.
	web := &appsv1.Deployment{}
	g.Expect(h.c.Get(t.Context(), client.ObjectKey{Namespace: "checked", Name: "web"}, web)).To(Succeed())
	var availableAt time.Time
	for _, c := range web.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			availableAt = c.LastTransitionTime.Time
		}
	}
	g.Expect(availableAt).NotTo(BeZero())
	g.Expect(h.job(g, "checked", "smoke").CreationTimestamp.Time).NotTo(BeTemporally("<", availableAt),
		"a layer test started before the rest of its layer was ready")

	// A fixed test in a new revision runs afresh and passes; the dependent follows.
	files["addons/checked/all.yaml"] = strings.Replace(files["addons/checked/all.yaml"],
		testJob("e2e", true), testJob("e2e", false), 1)
	fixed := h.commitTo("ltests", "ltests", files)
	fixedRun := h.waitTestRun("checked", "e2e", "0.1.0", fixed)
	g.Expect(fixedRun).NotTo(Equal(failedRun))
	h.waitLayer("checked", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(l.Status.Revision).To(Equal(fixed))
		g.Expect(cond(l, kraanv1.ReadyCondition).Message).To(ContainSubstring("2 layer tests passed"))
	})
	h.waitLayer("consumer", kraanv1.DeployedState, nil)
	smoke := h.job(g, "checked", "smoke").UID

	// A new version with no other change runs the tests again before Deployed.
	h.updateLayer("checked", func(l *kraanv1.AddonsLayer) { l.Spec.Version = "0.2.0" })
	rerun := h.waitTestRun("checked", "smoke", "0.2.0", fixed)
	g.Expect(rerun).NotTo(Equal(smoke), "the test Job was not run again for the new version")
	h.waitLayer("checked", kraanv1.DeployedState, func(g Gomega, l *kraanv1.AddonsLayer) {
		g.Expect(l.Status.Version).To(Equal("0.2.0"))
		g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
	})
	j := h.job(g, "checked", "smoke")
	g.Expect(j.UID).To(Equal(rerun))
	g.Expect(j.Status.Succeeded).To(BeNumerically("==", 1), "Deployed before the test Job succeeded")
	// The previous run's Job is gone, not left beside the new one.
	err := h.c.Get(t.Context(), client.ObjectKey{Namespace: "checked", Name: "smoke"}, &batchv1.Job{})
	g.Expect(apierrors.IsNotFound(err)).To(BeFalse())
}
