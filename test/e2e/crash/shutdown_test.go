package crash_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// What the operator logs when it stops with Helm runs in flight.
const (
	logWaitingForRuns = "Stopping: waiting for the Helm runs in flight to finish"
	logRunsFinished   = "Stopping: every Helm run in flight finished"
	logRunsCut        = "Stopping with Helm runs unfinished after the grace period"
)

// TestShutdown_TerminatedDuringInstall_FinishesItFirst: SIGTERM (a rolling
// update of the operator, an OLM upgrade) while Helm waits for a first
// install's pods. The operator keeps the run going through its grace period
// instead of cutting it: the install ends deployed before the process exits,
// so no revision is left pending for the next leader, which finds the
// release in sync and adds nothing.
func TestShutdown_TerminatedDuringInstall_FinishesItFirst(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	gated := newGate(ns)
	first := startOperator(t, "first")

	newRelease(t, ns, map[string]any{"message": "one", "nodeSelector": gated.nodeSelector()})
	waitMidOperation(t, ns, gated, 1, "pending-install")
	terminateMidRollout(t, first, gated)
	g.Expect(first.Log()).To(ContainSubstring(logRunsFinished))
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "deployed"}),
		"the stop cut the install: its revision was left for the next leader")

	hr := startAndReady(t, ns)
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "deployed"}), "the next leader added a revision")
	g.Expect(hr.Status.History).NotTo(BeEmpty())
	g.Expect(hr.Status.History[0].Version).To(Equal(1))
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil())
	expectRolledOut(g, deployment(g, ns))
}

// TestShutdown_TerminatedDuringUpgrade_FinishesItFirst: the same during an
// upgrade: revision 2 ends deployed (1 superseded) before the process
// exits, and the next leader neither rolls back nor upgrades again.
func TestShutdown_TerminatedDuringUpgrade_FinishesItFirst(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	gated := newGate(ns)
	first := startOperator(t, "first")

	newRelease(t, ns, map[string]any{"message": "one"})
	readyAt(t, ns)
	uid := deployment(g, ns).UID
	setValues(t, ns, map[string]any{"message": "two", "nodeSelector": gated.nodeSelector()})
	waitMidOperation(t, ns, gated, 2, "pending-upgrade")
	terminateMidRollout(t, first, gated)
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "superseded", 2: "deployed"}),
		"the stop cut the upgrade: its revision was left for the next leader")

	hr := startAndReady(t, ns)
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "superseded", 2: "deployed"}), "the next leader added a revision")
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil())
	g.Expect(configMapData(g, ns)).To(HaveKeyWithValue("message", "two"))
	g.Expect(deployment(g, ns).UID).To(Equal(uid), "the Deployment was recreated")
}

// TestShutdown_GracePeriodOver_ExitsAndTheNextLeaderResumes: a rollout
// longer than --helm-run-grace-period does not hold the process past it:
// the operator exits on its own (no SIGKILL needed), the revision stays
// pending-install, and the next leader resumes the wait to deployed with no
// failed revision and no retry.
func TestShutdown_GracePeriodOver_ExitsAndTheNextLeaderResumes(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	gated := newGate(ns)
	first := startOperator(t, "first", "--helm-run-grace-period=2s")

	newRelease(t, ns, map[string]any{"message": "one", "nodeSelector": gated.nodeSelector()})
	waitMidOperation(t, ns, gated, 1, "pending-install")
	stopped := terminate(first)
	expectExitedCleanly(t, first, stopped)
	g.Expect(first.Log()).To(ContainSubstring(logRunsCut))
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "pending-install"}))

	gated.open(t)
	hr := startAndReady(t, ns)
	g.Expect(helmRevisions(g, ns)).To(Equal(map[int]string{1: "deployed"}), "the pending install was not resumed in place")
	g.Expect(condition(hr, kraanv1.RemediatedCondition)).To(BeNil())
	expectResumedEvents(t, ns, 1, kraanv1.ReasonInstallSucceeded)
}

// terminateMidRollout sends SIGTERM to op while Helm waits on the gated
// rollout, checks op waits for its run, opens the gate and checks op then
// exits on its own.
func terminateMidRollout(t *testing.T, op *suite.RunningOperator, gated gate) {
	t.Helper()
	stopped := terminate(op)
	expectDraining(t, op)
	gated.open(t)
	expectExitedCleanly(t, op, stopped)
}

// terminate sends SIGTERM to op, as the kubelet does, without waiting: the
// channel receives Stop's outcome once the process has exited (an error if
// it had to be killed after suite.OperatorStopTimeout).
func terminate(op *suite.RunningOperator) <-chan error {
	stopped := make(chan error, 1)
	go func() { stopped <- op.Stop() }()
	return stopped
}

// expectDraining waits until op says it waits for its Helm runs, and checks
// it is still running then.
func expectDraining(t *testing.T, op *suite.RunningOperator) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(op.Log).WithTimeout(suite.OperatorStopTimeout).WithPolling(interval).
		Should(ContainSubstring(logWaitingForRuns), "the operator did not wait for its Helm run")
	g.Expect(op.State()).To(BeNil(), "the operator exited while it said it waits for its Helm run")
}

// expectExitedCleanly waits for the stop's outcome: op exited on its own,
// with status 0, within suite.OperatorStopTimeout (the pod's
// terminationGracePeriodSeconds).
func expectExitedCleanly(t *testing.T, op *suite.RunningOperator, stopped <-chan error) {
	t.Helper()
	g := NewWithT(t)
	var err error
	g.Eventually(stopped).WithTimeout(suite.OperatorStopTimeout + time.Minute).Should(Receive(&err))
	g.Expect(err).NotTo(HaveOccurred(), "the operator did not stop within its termination grace period")
	g.Expect(op.State().Success()).To(BeTrue(), "the operator exited with %s", op.State())
}

// startAndReady starts the next operator process and waits until the
// release is Ready.
func startAndReady(t *testing.T, ns string) *kraanv1.HelmRelease {
	t.Helper()
	startOperator(t, "second")
	return readyAt(t, ns)
}
