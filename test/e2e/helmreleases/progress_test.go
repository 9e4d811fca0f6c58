package helmreleases_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestHelmRelease_ReportsProgressWhileHelmWaits watches a release during an
// install that waits for its pods: they stay Pending on a node selector until
// the test labels the node. Meanwhile the object says what Helm is doing
// (Reconciling=True, Progressing, naming the action, release and chart; Ready
// Unknown), and a kubectl-style watch sees that before Ready=True.
func TestHelmRelease_ReportsProgressWhileHelmWaits(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	label := "e2e.kraan.io/" + ns
	seen := watchConditions(t, ns, "slow")
	newRelease(t, ns, "slow", "small", withVersion("0.1.0"),
		withValues(map[string]any{"nodeSelector": map[string]any{label: "go"}}))

	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "slow")
		reconciling := condition(hr, kraanv1.ReconcilingCondition)
		g.Expect(reconciling).NotTo(BeNil())
		g.Expect(reconciling.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(reconciling.Reason).To(Equal(kraanv1.ReasonProgressing))
		g.Expect(reconciling.Message).To(Equal(fmt.Sprintf("Running install of release %s/slow with chart small@0.1.0", ns)))
		ready := condition(hr, kraanv1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(ready.Reason).To(Equal(kraanv1.ReasonProgressing))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return helmRevisions(g, ns, "slow") }).
		WithTimeout(timeout).WithPolling(interval).Should(ConsistOf("1=pending-install"), "Helm waits for the pods")
	g.Expect(condition(get(g, ns, "slow"), kraanv1.ReconcilingCondition).Reason).To(Equal(kraanv1.ReasonProgressing), "still")

	labelNodes(t, label, "go")
	hr := readyAt(t, ns, "slow")
	g.Expect(condition(hr, kraanv1.ReconcilingCondition)).To(BeNil())
	g.Expect(condition(hr, kraanv1.ReleasedCondition).Reason).To(Equal(kraanv1.ReasonInstallSucceeded))

	states := seen()
	progressing := slices.Index(states, "Reconciling=True/Progressing Ready=Unknown/Progressing")
	ready := slices.IndexFunc(states, func(s string) bool { return strings.HasSuffix(s, "Ready=True/Succeeded") })
	g.Expect(progressing).To(BeNumerically(">=", 0), "states seen: %v", states)
	g.Expect(ready).To(BeNumerically(">", progressing), "states seen: %v", states)
}

// TestHelmRelease_FailedFirstInstallSaysInstallFailed: an install whose wait
// times out is reported as a failed install, not a failed upgrade.
func TestHelmRelease_FailedFirstInstallSaysInstallFailed(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "never", "small", withVersion("0.1.0"),
		withValues(unschedulablePods),
		func(hr *kraanv1.HelmRelease) { hr.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second} })
	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "never")
		released := condition(hr, kraanv1.ReleasedCondition)
		g.Expect(released).NotTo(BeNil())
		g.Expect(released.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(released.Reason).To(Equal(kraanv1.ReasonInstallFailed), released.Message)
		g.Expect(condition(hr, kraanv1.StalledCondition)).NotTo(BeNil())
		g.Expect(condition(hr, kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestHelmRelease_MissingChartVersionStallsThenRecovers: a version the
// repository does not list stalls the release (terminal: nothing is retried),
// and publishing it brings the release back without touching its spec, within
// the HelmRepository's interval.
func TestHelmRelease_MissingChartVersionStallsThenRecovers(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0")
	helmRepo := newHelmRepository(ns, "charts", repo.URL)
	helmRepo.Spec.Interval = metav1.Duration{Duration: time.Second}
	g.Expect(k8s.Create(context.Background(), helmRepo)).To(Succeed())
	newRelease(t, ns, "app", "small", withVersion("0.2.0"))

	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "app")
		stalled := condition(hr, kraanv1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(kraanv1.ReasonArtifactFailed))
		g.Expect(stalled.Message).To(ContainSubstring("no version of small matches 0.2.0"))
		g.Expect(condition(hr, kraanv1.ReconcilingCondition)).To(BeNil(), "nothing is being retried")
		g.Expect(condition(hr, kraanv1.ReadyCondition).Reason).To(Equal(kraanv1.ReasonArtifactFailed))
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation), "the generation was handled")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "app")).To(BeEmpty())

	published := time.Now()
	repo.Add(chartrepo.ChartDir("small"), "0.2.0")
	hr := readyAt(t, ns, "app")
	t.Logf("Ready %s after the version was published (repository interval 1s)", time.Since(published).Round(10*time.Millisecond))
	g.Expect(hr.Status.History[0].ChartVersion).To(Equal("0.2.0"))
	g.Expect(condition(hr, kraanv1.StalledCondition)).To(BeNil())
}

// TestHelmRelease_RepositoryOutageBacksOffAndRecovers: a repository answering
// 503 is transient: the release keeps reconciling (not stalled), retries with
// back-off, and installs once the repository is back, with no change of spec.
func TestHelmRelease_RepositoryOutageBacksOffAndRecovers(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0")
	repo.SetUnavailable(true)
	var mu sync.Mutex
	var attempts []time.Time
	repo.OnRequest(func(req *http.Request) {
		if req.URL.Path == chartrepo.IndexPath {
			mu.Lock()
			defer mu.Unlock()
			attempts = append(attempts, time.Now())
		}
	})
	g.Expect(k8s.Create(context.Background(), newHelmRepository(ns, "charts", repo.URL))).To(Succeed())
	newRelease(t, ns, "app", "small", withVersion("0.1.0"))

	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "app")
		reconciling := condition(hr, kraanv1.ReconcilingCondition)
		g.Expect(reconciling).NotTo(BeNil())
		g.Expect(reconciling.Reason).To(Equal(kraanv1.ReasonArtifactFailed))
		g.Expect(reconciling.Message).To(ContainSubstring("503"))
		g.Expect(condition(hr, kraanv1.StalledCondition)).To(BeNil())
		g.Expect(condition(hr, kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// Retried with exponential back-off (750ms, 1.5s, 3s… by default): the
	// wait between attempts grows.
	g.Eventually(func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts)
	}).WithTimeout(timeout).WithPolling(interval).Should(BeNumerically(">=", 4), "the release is retried")
	mu.Lock()
	gaps := []time.Duration{attempts[1].Sub(attempts[0]), attempts[2].Sub(attempts[1]), attempts[3].Sub(attempts[2])}
	mu.Unlock()
	t.Logf("waits between attempts during the outage: %v", gaps)
	g.Expect(gaps[2]).To(BeNumerically(">", gaps[0]+gaps[0]/2), "back-off grows: %v", gaps)

	repo.SetUnavailable(false)
	hr := readyAt(t, ns, "app")
	g.Expect(hr.Status.History[0].ChartVersion).To(Equal("0.1.0"))
}

// watchConditions records, in order, the distinct Reconciling and Ready
// states a watch on the HelmRelease delivers, as `kubectl get -w` would show
// them, until the test ends. The returned function reads them.
func watchConditions(t *testing.T, namespace, name string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &kraanv1.HelmReleaseList{}, client.InNamespace(namespace))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var states []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			hr, ok := ev.Object.(*kraanv1.HelmRelease)
			if !ok || ev.Type == watch.Error || hr.Name != name {
				continue
			}
			s := describe(hr, kraanv1.ReconcilingCondition) + " " + describe(hr, kraanv1.ReadyCondition)
			mu.Lock()
			if len(states) == 0 || states[len(states)-1] != s {
				states = append(states, s)
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), states...)
	}
}

func describe(hr *kraanv1.HelmRelease, condType string) string {
	c := condition(hr, condType)
	if c == nil {
		return condType + "=-"
	}
	return fmt.Sprintf("%s=%s/%s", condType, c.Status, c.Reason)
}

// labelNodes sets a label on every node of the plane until the test ends, so
// that pods selecting it can be scheduled.
func labelNodes(t *testing.T, key, value string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	nodes := &corev1.NodeList{}
	g.Expect(k8s.List(ctx, nodes)).To(Succeed())
	g.Expect(nodes.Items).NotTo(BeEmpty())
	for i := range nodes.Items {
		node := &nodes.Items[i]
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels[key] = value
		g.Expect(k8s.Patch(ctx, node, patch)).To(Succeed())
		t.Cleanup(func() {
			base := node.DeepCopy()
			delete(node.Labels, key)
			_ = k8s.Patch(context.Background(), node, client.MergeFrom(base))
		})
	}
}
