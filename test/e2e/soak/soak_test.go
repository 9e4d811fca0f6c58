package soak_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestSoak creates the workload, then runs one cycle per kill: the
// cycle's operations, in some cycles a kube-apiserver restart while what
// they started rolls out, a random pause, the SIGKILL of the operator, and
// the wait until its successor leads. The first cycle's kill lands in the
// first installs; the soak then waits for that first rollout, so that what
// follows upgrades releases rather than installing them. At the end
// everything must converge, and the audit of every object, revision, UID
// and log must find nothing.
func TestSoak(t *testing.T) {
	began := time.Now()
	g := NewWithT(t)
	sz, err := sizeFromEnv()
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("Soak %s, seed %d (KRAAN_SOAK_SEED=%d replays its schedule): %d kills, %d apiserver restarts, "+
		"%d chained layers of %d HelmReleases, %d standalone HelmReleases, 1 Habitat",
		sz.name, sz.seed, sz.seed, sz.kills, sz.restarts, sz.layers, sz.layerReleases, sz.standalone)

	uids := startUIDRecorder(t)
	ops := startOperators(t)
	w := newWorkload(t, sz)
	t.Cleanup(func() {
		if t.Failed() { // what led there; the operators' logs are kept
			t.Logf("Operations applied:\n  %s", strings.Join(w.log, "\n  "))
		}
	})
	w.create()
	t.Logf("Workload created: %d releases", len(w.releases))
	ops.waitLeader(g, kill{}) // the first operator leads: anyone does

	restartIn := restartCycles(sz)
	unrun := w.rnd.Perm(len(operations))
	last := kill{at: time.Now()} // with no kills, convergence counts from here
	var downtimes []time.Duration
	for cycle := 1; cycle <= sz.kills; cycle++ {
		var did []string
		if cycle > 1 { // the first cycle's workload is the creation
			did = w.step(g, sz.kills-cycle+1, &unrun)
		}
		if restartIn[cycle] {
			// Mid-rollout: a layer version bump sets every layer rolling.
			did = append(did, w.apply(g, operations[slices.IndexFunc(operations, isVersionBump)]))
			pause(w.rnd, 2*time.Second)
			down, err := plane.RestartAPIServer(t.Context())
			g.Expect(err).NotTo(HaveOccurred())
			downtimes = append(downtimes, down.Round(time.Millisecond))
			t.Logf("Cycle %d: kube-apiserver restarted, down %v", cycle, down.Round(time.Millisecond))
		}
		pause(w.rnd, sz.maxKillDelay)
		last, err = ops.Kill()
		g.Expect(err).NotTo(HaveOccurred())
		leads := ops.waitLeader(g, last)
		t.Logf("Cycle %d: %s; killed %s; the next leads %v after the kill", cycle, strings.Join(did, "; "), last.name, leads.Round(time.Millisecond))
		if cycle == 1 {
			g.Eventually(w.converged).WithTimeout(sz.converge).WithPolling(2 * time.Second).Should(Succeed())
			t.Logf("First rollout done %v after the soak began", time.Since(began).Round(time.Second))
		}
	}

	g.Eventually(w.converged).WithTimeout(sz.converge).WithPolling(2 * time.Second).Should(Succeed())
	convergence := time.Since(last.at)

	audits := make([]audit, 0, len(w.releases))
	var deleted []*release
	for _, r := range w.releases {
		if r.deleted {
			deleted = append(deleted, r)
			continue
		}
		audits = append(audits, auditRevisions(r, helmHistory(g, r)))
	}
	report(t, sz, w, ops, audits, downtimes, convergence, time.Since(began))

	for _, a := range audits {
		g.Expect(a.problems).To(BeEmpty(), "revisions of %s", a.release)
	}
	g.Expect(uids.recreated(deleted)).To(BeEmpty(), "objects deleted and created again (of %d recorded)", uids.count())
	panics, err := ops.Panics()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(panics).To(BeEmpty(), "panics in the operator logs")
	g.Expect(ops.Kills()).To(HaveLen(sz.kills))
}

func isVersionBump(op operation) bool { return op.name == "layer version" }

// restartCycles spreads the apiserver restarts over the kill cycles.
func restartCycles(sz size) map[int]bool {
	at := map[int]bool{}
	for j := 1; j <= sz.restarts; j++ {
		at[j*sz.kills/(sz.restarts+1)+1] = true
	}
	return at
}

// pause waits a random time below maxDelay: where in a rollout the next
// disruption lands. It is the workload's schedule, not a synchronisation:
// nothing after it assumes anything has happened.
func pause(rnd *rand.Rand, maxDelay time.Duration) {
	if maxDelay > 0 {
		time.Sleep(time.Duration(rnd.Int64N(int64(maxDelay))))
	}
}

// report prints what the soak did and measured.
func report(t *testing.T, sz size, w *workload, ops *operators, audits []audit, downtimes []time.Duration, convergence, wall time.Duration) {
	var b strings.Builder
	attempts, ready := ops.Started()
	fmt.Fprintf(&b, "SOAK %s seed %d: %d kills, %d apiserver restarts (down %v), %d operator processes (%d became ready), %d exits on their own\n",
		sz.name, sz.seed, len(ops.Kills()), len(downtimes), downtimes, attempts, ready, len(ops.Exits()))
	for _, e := range ops.Exits() {
		fmt.Fprintf(&b, "  exit: %s %s\n", e.name, e.state)
	}
	fmt.Fprintf(&b, "%d operations:\n", len(w.log))
	for _, l := range w.log {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "converged %v after the last kill; wall time %v\n", convergence.Round(time.Millisecond), wall.Round(time.Second))
	fmt.Fprintf(&b, "extra = revisions - changes - 1: above 0 only by retries of interrupted operations, below 0 when changes were rolled out together\n")
	fmt.Fprintf(&b, "%-44s %9s %7s %11s %5s\n", "release", "revisions", "changes", "interrupted", "extra")
	for _, a := range audits {
		fmt.Fprintf(&b, "%-44s %9d %7d %11d %5d\n", a.release.namespace+"/"+a.release.name,
			a.revisions, a.release.changes(), a.interrupted, a.revisions-a.release.changes()-1)
	}
	t.Log(b.String())
}
