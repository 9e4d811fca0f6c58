package crash_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// operatorLogTail is how many lines of each operator's log a failed test prints.
const operatorLogTail = 80

// startOperator starts the operator binary against the plane, with the admin
// kubeconfig and leader election, and waits until its informers have synced
// (/readyz). Leader election may still hold it back: a Lease left by a killed
// predecessor expires first. When the test ends the process is stopped, if
// still running, and a failed test prints the tail of its log.
func startOperator(t *testing.T, name string, args ...string) *suite.RunningOperator {
	t.Helper()
	op, err := suite.StartOperator(t.Context(), suite.OperatorProcess{
		Name:       name,
		Binary:     operatorBinary,
		Kubeconfig: kubeconfig,
		Dir:        t.TempDir(),
		Args: append([]string{
			"--leader-elect",
			"--leader-election-namespace=" + leaseNamespace,
			"--log-level=debug", // Helm's own log: what it was waiting for when killed
		}, args...),
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(op.LogTail(operatorLogTail))
		}
	})
	return op
}

// leaseHolder returns who holds the operator's Lease, or fails g.
func leaseHolder(g Gomega) string {
	holder, err := suite.LeaseHolder(context.Background(), k8s, leaseNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	return holder
}

// kill is what killMidOperation left: the holder of the Lease the killed
// operator held and when it was killed.
type kill struct {
	holder string
	at     time.Time
}

// killMidOperation waits until Helm storage shows the release's revision
// with status (pending-install, pending-upgrade) and the gated Deployment is
// applied, so Helm waits for pods that cannot be scheduled, then SIGKILLs op.
func killMidOperation(t *testing.T, op *suite.RunningOperator, ns string, gated gate, revision int, status string) kill {
	t.Helper()
	g := NewWithT(t)
	waitMidOperation(t, ns, gated, revision, status)
	k := kill{holder: leaseHolder(g), at: time.Now()}
	g.Expect(op.Kill()).To(Succeed())
	return k
}

// recoverAfter opens the gate and starts a new operator process, waits until
// it leads and the release is Ready, and returns the release. It logs how
// long after the kill each was: the Lease's expiry dominates the recovery
// time.
func recoverAfter(t *testing.T, ns string, gated gate, k kill) *kraanv1.HelmRelease {
	t.Helper()
	gated.open(t)
	startOperator(t, "second")
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(leaseHolder(g)).NotTo(Equal(k.holder))
	}).WithTimeout(suite.OperatorStartTimeout).WithPolling(interval).Should(Succeed())
	t.Logf("A new operator leads %v after the kill", time.Since(k.at).Round(time.Millisecond))
	hr := readyAt(t, ns)
	t.Logf("Ready at generation %d %v after the kill", hr.Generation, time.Since(k.at).Round(time.Millisecond))
	return hr
}

// waitMidOperation waits until Helm storage shows the release's revision
// with status (pending-install, pending-upgrade) and the gated Deployment is
// applied: Helm waits for pods that cannot be scheduled until the gate opens.
func waitMidOperation(t *testing.T, ns string, gated gate, revision int, status string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(helmRevisions(g, ns)).To(HaveKeyWithValue(revision, status))
		g.Expect(deployment(g, ns).Spec.Template.Spec.NodeSelector).To(HaveKey(string(gated)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
