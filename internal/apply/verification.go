package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// outputTailLines is how many lines of a failed test's output a layer's
// message carries: enough to see the failure, short enough for a condition.
const outputTailLines = 10

var (
	jobGroupKind = batchv1.SchemeGroupVersion.WithKind("Job").GroupKind()
	podGroupKind = corev1.SchemeGroupVersion.WithKind("Pod").GroupKind()
)

// PrepareTestRun makes way for a run of a layer test. obj carries the run
// (manifest.StampLayerTestRun). When the live object belongs to another run it
// is deleted, so that applying obj creates it afresh and the test runs again:
// a Job or Pod cannot be restarted in place. It reports whether obj can be
// applied now; false means the previous run's object is still going away.
func (a *Applier) PrepareTestRun(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	live, err := a.get(ctx, obj)
	if err != nil || live == nil {
		return err == nil, err
	}
	if live.GetDeletionTimestamp() != nil {
		return false, nil
	}
	run := obj.GetAnnotations()[manifest.LayerTestRunAnnotation]
	if live.GetAnnotations()[manifest.LayerTestRunAnnotation] == run {
		return true, nil
	}
	// Background: a Job's old pods are told apart from the new run's by their
	// controller-uid label, and foreground deletion would need the garbage
	// collector to finish before the test could start again.
	if err := client.IgnoreNotFound(a.client.Delete(ctx, live, client.PropagationPolicy("Background"))); err != nil {
		return false, fmt.Errorf("deleting the previous run of test %s: %w", Describe(obj), err)
	}
	return false, nil
}

// TestHealthOf judges a layer test: like HealthOf, except that a Job or a Pod
// passes only once it has run to success. kstatus calls a started Job and a
// pod that ran to completion, whatever its exit code, "current": right for a
// workload, wrong for a test.
func (a *Applier) TestHealthOf(ctx context.Context, obj *unstructured.Unstructured) (Health, error) {
	gk := obj.GroupVersionKind().GroupKind()
	if gk != jobGroupKind && gk != podGroupKind {
		return a.HealthOf(ctx, obj)
	}
	live, err := a.get(ctx, obj)
	if err != nil || live == nil {
		return Health{Reason: NotFound, Message: "it does not exist"}, err
	}
	if gk == podGroupKind {
		return testPodHealth(live), nil
	}
	return testJobHealth(live), nil
}

func testPodHealth(live *unstructured.Unstructured) Health {
	phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
	switch corev1.PodPhase(phase) {
	case corev1.PodSucceeded:
		return Health{Ready: true, Reason: "Succeeded", Message: "the test pod succeeded"}
	case corev1.PodFailed:
		return Health{Failed: true, Reason: "Failed", Message: "the test pod failed"}
	}
	return Health{Reason: "InProgress", Message: "the test pod is " + strings.ToLower(phase)}
}

func testJobHealth(live *unstructured.Unstructured) Health {
	for _, condType := range []string{string(batchv1.JobFailed), string(batchv1.JobComplete)} {
		c, _ := conditionOf(live, condType)
		if !isTrue(c) {
			continue
		}
		reason, _ := c["reason"].(string)
		msg, _ := c["message"].(string)
		return Health{Ready: condType == string(batchv1.JobComplete), Failed: condType == string(batchv1.JobFailed),
			Reason: condType, Message: strings.TrimPrefix(reason+": "+msg, ": ")}
	}
	active, _, _ := unstructured.NestedInt64(live.Object, "status", "active")
	succeeded, _, _ := unstructured.NestedInt64(live.Object, "status", "succeeded")
	failed, _, _ := unstructured.NestedInt64(live.Object, "status", "failed")
	return Health{Reason: "InProgress", Message: fmt.Sprintf("the test Job is running: %d active, %d succeeded, %d failed",
		active, succeeded, failed)}
}

// TestOutput is the output of a failed layer test (a Job's pods, or a Pod):
// the exit code and the tail of the termination message of each container
// that ended. The kubelet fills a termination message with the tail of the
// container's log when the container sets terminationMessagePolicy:
// FallbackToLogsOnError, so that is where a test's output comes from.
func (a *Applier) TestOutput(ctx context.Context, obj *unstructured.Unstructured) (string, error) {
	live, err := a.get(ctx, obj)
	if err != nil || live == nil {
		return "", err
	}
	switch live.GroupVersionKind().GroupKind() {
	case jobGroupKind:
		return a.jobOutput(ctx, live)
	case podGroupKind:
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, pod); err != nil {
			return "", fmt.Errorf("reading %s: %w", Describe(obj), err)
		}
		return joinOutput(podOutput(pod)), nil
	}
	return "", nil
}

func (a *Applier) jobOutput(ctx context.Context, live *unstructured.Unstructured) (string, error) {
	job := &batchv1.Job{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, job); err != nil {
		return "", fmt.Errorf("reading %s: %w", Describe(live), err)
	}
	// Listed as unstructured, which the client reads from the API server: a
	// typed list would start a cache of every pod of the cluster, whole, to
	// read the few of one failed test.
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := a.client.List(ctx, list, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return "", fmt.Errorf("listing the pods of %s: %w", Describe(live), err)
	}
	pods := make([]corev1.Pod, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &pods[i]); err != nil {
			return "", fmt.Errorf("reading a pod of %s: %w", Describe(live), err)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var output []string
	for i := range pods {
		output = append(output, podOutput(&pods[i])...)
	}
	return joinOutput(output), nil
}

// podOutput lists, per terminated container, its exit code and the last lines
// of its termination message.
func podOutput(pod *corev1.Pod) []string {
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	var out []string
	for _, cs := range statuses {
		term := cs.State.Terminated
		if term == nil {
			continue
		}
		line := fmt.Sprintf("container %s/%s exited %d", pod.Name, cs.Name, term.ExitCode)
		if msg := strings.TrimSpace(term.Message); msg != "" {
			line += ":\n" + tailLines(msg, outputTailLines)
		}
		out = append(out, line)
	}
	return out
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func joinOutput(output []string) string {
	if len(output) == 0 {
		return "no output recorded (set terminationMessagePolicy: FallbackToLogsOnError on the test's containers to see the tail of their logs here)"
	}
	return strings.Join(output, "; ")
}
