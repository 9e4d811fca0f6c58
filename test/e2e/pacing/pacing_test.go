// Package pacing_test reproduces, on a throttled local control plane, the
// cliff of issue #30: a wave of HelmReleases applied at once, where each
// install's wait measured the backlog of the whole wave on the cluster's own
// controllers and most timed out. kube-controller-manager runs with
// --kube-api-qps=5, so Deployments roll out as in a busy cluster, one shared
// backlog; a wave of releases with a 30 s timeout is applied at once, and
// every one must end Ready without a failed install or a retry.
//
// Before the pacing (internal/pace) most of the wave failed here. To see it
// again, build an older operator and point KRAAN_PACING_OPERATOR at it.
package pacing_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// The wave: releases of the small chart (a Deployment, a Service and a
// ConfigMap), each with a timeout that one rollout meets easily and the
// whole backlog does not: at 10 QPS the controller-manager rolls out about
// one release every two seconds (each takes some 15 of its requests).
const (
	waveSize       = 60
	releaseTimeout = 30 * time.Second
	// waveDeadline bounds the whole wave: the cluster needs a few minutes.
	waveDeadline = 15 * time.Minute
	poll         = 2 * time.Second
)

// leaseNamespace holds the operator's release record key.
const leaseNamespace = "kraan-system"

var (
	k8s            client.Client
	kubeconfig     string
	operatorBinary string
)

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true,
		ControllerManagerArgs: []string{"--kube-api-qps=5", "--kube-api-burst=5"}}, func(s *suite.Suite) (err error) {
		k8s, kubeconfig = s.Client, s.Kubeconfig
		operatorBinary, err = suite.PrepareOperatorBinary(s, leaseNamespace)
		if older := os.Getenv("KRAAN_PACING_OPERATOR"); older != "" {
			operatorBinary = older
		}
		return err
	}))
}

// TestPacing_NoReleaseOfAWaveFailsInItsQueue applies the wave at once and
// waits until every release is Ready or failed.
func TestPacing_NoReleaseOfAWaveFailsInItsQueue(t *testing.T) {
	ns := suite.NewNamespace(t, k8s, "wave")
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	NewWithT(t).Expect(k8s.Create(t.Context(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Hour}},
	})).To(Succeed())
	op, err := suite.StartOperator(t.Context(), suite.OperatorProcess{
		Name: "kraan-operator", Binary: operatorBinary, Kubeconfig: kubeconfig, Dir: t.TempDir(),
		Args: []string{"--leader-election-namespace=" + leaseNamespace},
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(op.LogTail(20))
		}
	})

	start := time.Now()
	for i := range waveSize {
		NewWithT(t).Expect(k8s.Create(t.Context(), &kraanv1.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%d", i)},
			Spec: kraanv1.HelmReleaseSpec{
				Interval: metav1.Duration{Duration: time.Hour},
				Timeout:  &metav1.Duration{Duration: releaseTimeout},
				Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
					Chart: "small", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
				}},
			},
		})).To(Succeed())
	}

	var outcome waveOutcome
	sawQueued := false
	NewWithT(t).Eventually(func(g Gomega) {
		list := &kraanv1.HelmReleaseList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		outcome = outcomeOf(list.Items)
		sawQueued = sawQueued || outcome.queued > 0
		g.Expect(outcome.ready+outcome.failed).To(Equal(waveSize), "%s", outcome)
	}).WithTimeout(waveDeadline).WithPolling(poll).Should(Succeed())
	t.Logf("Wave of %d releases (timeout %v) on a plane whose controller-manager runs at 5 QPS: %s after %v",
		waveSize, releaseTimeout, outcome, time.Since(start).Round(time.Second))

	g := NewWithT(t)
	g.Expect(outcome.failed).To(BeZero(), "releases failed in the queue of their own wave: %s", outcome.failures)
	g.Expect(outcome.retries).To(BeZero(), "install retries used")
	g.Expect(sawQueued).To(BeTrue(), "no release was ever reported in the rollout queue (reason %s)", kraanv1.ReasonRolloutQueued)
}

// waveOutcome counts the releases of the wave by state.
type waveOutcome struct {
	ready, failed, queued, retries int
	failures                       []string
}

func (o waveOutcome) String() string {
	return fmt.Sprintf("%d Ready, %d failed, %d in the rollout queue, %d install failures counted", o.ready, o.failed, o.queued, o.retries)
}

// outcomeOf: Ready at its generation counts as ready; Stalled, or Ready
// False for a failed install, as failed; Reconciling with reason
// RolloutQueued as queued.
func outcomeOf(items []kraanv1.HelmRelease) waveOutcome {
	var o waveOutcome
	for _, hr := range items {
		o.retries += int(hr.Status.InstallFailures)
		ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
		reconciling := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReconcilingCondition)
		switch {
		case ready != nil && ready.Status == metav1.ConditionTrue && hr.Status.ObservedGeneration == hr.Generation:
			o.ready++
		case apimeta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.StalledCondition),
			ready != nil && ready.Status == metav1.ConditionFalse && strings.HasSuffix(ready.Reason, "Failed"):
			o.failed++
			if len(o.failures) == 0 && ready != nil {
				o.failures = append(o.failures, hr.Name+": "+ready.Message[:min(len(ready.Message), 400)])
			}
		case reconciling != nil && reconciling.Reason == kraanv1.ReasonRolloutQueued:
			o.queued++
		}
	}
	return o
}
