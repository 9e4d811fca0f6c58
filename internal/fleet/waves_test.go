package fleet

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

var (
	v1 = Target{Version: "v1", Revision: "r1"}
	v2 = Target{Version: "v2", Revision: "r2"}
)

// fleetOf is a canary cluster and n others, in the waves canary (one at a
// time) and rest (two at a time).
func fleetOf(t *testing.T, n int) ([]Member, []Wave) {
	clusters := make([]Cluster, 0, n+1)
	clusters = append(clusters, Cluster{Key: "fleet/canary", Labels: map[string]string{"ring": "canary"}})
	for i := range n {
		clusters = append(clusters, Cluster{Key: "fleet/c" + string(rune('0'+i)), Labels: map[string]string{"ring": "main"}})
	}
	members, waves, err := AssignWaves(clusters, []kraanv1.WaveSpec{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}, MaxInProgress: 1},
		{Name: "main", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "main"}}, MaxInProgress: 2},
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return members, waves
}

func deployedAt(t Target) kraanv1.LayerClusterStatus {
	return kraanv1.LayerClusterStatus{State: kraanv1.DeployedState, Version: t.Version, Revision: t.Revision,
		DeployedVersion: t.Version, DeployedRevision: t.Revision}
}

func allAt(members []Member, t Target) map[string]kraanv1.LayerClusterStatus {
	out := map[string]kraanv1.LayerClusterStatus{}
	for _, m := range members {
		out[m.Cluster.Key] = deployedAt(t)
	}
	return out
}

func actionsOf(p Plan, members []Member) []Action {
	out := make([]Action, len(members))
	for i, m := range members {
		out[i] = p.Actions[m.Cluster.Key]
	}
	return out
}

func TestAssignWaves_firstMatchingWaveThenRest(t *testing.T) {
	g := NewWithT(t)
	clusters := []Cluster{{Key: "a", Labels: map[string]string{"ring": "canary", "x": "1"}}, {Key: "b", Labels: map[string]string{"x": "1"}}}
	members, waves, err := AssignWaves(clusters, []kraanv1.WaveSpec{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
		{Name: "x", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"x": "1"}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(members[0].WaveName).To(Equal("canary"))
	g.Expect(members[1].WaveName).To(Equal("x"))
	g.Expect(waves).To(HaveLen(3))
	g.Expect(waves[2].Name).To(Equal(RestWave))

	members, waves, err = AssignWaves(clusters, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waves).To(Equal([]Wave{{Name: AllWave}}))
	g.Expect(members[1].WaveName).To(Equal(AllWave))
}

func TestPlanRollout_wavesInOrderWithMaxInProgress(t *testing.T) {
	g := NewWithT(t)
	members, waves := fleetOf(t, 3)
	entries := allAt(members, v1)
	rollout := NextRollout(&kraanv1.RolloutStatus{Version: "v1", Revision: "r1", Phase: kraanv1.RolloutComplete}, v2)
	g.Expect(Previous(rollout)).To(Equal(v1))

	plan := PlanRollout(members, waves, entries, rollout, true)
	g.Expect(actionsOf(plan, members)).To(Equal([]Action{Apply, Wait, Wait, Wait}), "the canary first, alone")
	g.Expect(plan.Why["fleet/c0"]).To(ContainSubstring("waiting for wave canary"))

	entries["fleet/canary"] = kraanv1.LayerClusterStatus{State: kraanv1.ApplyingState, Version: "v2", Revision: "r2", DeployedVersion: "v1", DeployedRevision: "r1"}
	plan = PlanRollout(members, waves, entries, rollout, true)
	g.Expect(actionsOf(plan, members)).To(Equal([]Action{Apply, Wait, Wait, Wait}), "wave main waits for the canary to be Deployed")

	entries["fleet/canary"] = deployedAt(v2)
	plan = PlanRollout(members, waves, entries, rollout, true)
	g.Expect(actionsOf(plan, members)).To(Equal([]Action{Apply, Apply, Apply, Wait}), "two of main at once")
	g.Expect(plan.Why["fleet/c2"]).To(ContainSubstring("maxInProgress 2"))
	g.Expect(plan.Rollout.Wave).To(Equal("main"))

	entries["fleet/c0"] = deployedAt(v2)
	entries["fleet/c1"] = kraanv1.LayerClusterStatus{State: kraanv1.ApplyingState, Version: "v2", Revision: "r2"}
	plan = PlanRollout(members, waves, entries, rollout, true)
	g.Expect(actionsOf(plan, members)).To(Equal([]Action{Apply, Apply, Apply, Apply}))

	entries["fleet/c1"], entries["fleet/c2"] = deployedAt(v2), deployedAt(v2)
	assessed := Assess(rollout, members, entries, true)
	g.Expect(assessed.Phase).To(Equal(kraanv1.RolloutComplete))
	g.Expect(NextRollout(&assessed, Target{Version: "v3", Revision: "r3"}).PreviousVersion).To(Equal("v2"))
}

func TestPlanRollout_unreachableHoldsNothingBack(t *testing.T) {
	g := NewWithT(t)
	members, waves := fleetOf(t, 2)
	entries := allAt(members, v1)
	entries["fleet/canary"] = kraanv1.LayerClusterStatus{State: kraanv1.UnreachableState, Reason: kraanv1.ReasonClusterUnreachable,
		DeployedVersion: "v1", DeployedRevision: "r1", Version: "v1", Revision: "r1"}
	rollout := NextRollout(&kraanv1.RolloutStatus{Version: "v1", Revision: "r1", Phase: kraanv1.RolloutComplete}, v2)
	plan := PlanRollout(members, waves, entries, rollout, true)
	g.Expect(actionsOf(plan, members)).To(Equal([]Action{Apply, Apply, Apply}), "the unreachable canary is retried, main goes on")

	entries["fleet/c0"], entries["fleet/c1"] = deployedAt(v2), deployedAt(v2)
	assessed := Assess(plan.Rollout, members, entries, true)
	g.Expect(assessed.Phase).To(Equal(kraanv1.RolloutComplete))
	g.Expect(assessed.Message).To(ContainSubstring("unreachable, retried: fleet/canary"))
}

func TestPlanRollout_failedWaveHaltsAndRollsBack(t *testing.T) {
	g := NewWithT(t)
	members, waves := fleetOf(t, 2)
	entries := allAt(members, v1)
	rollout := NextRollout(&kraanv1.RolloutStatus{Version: "v1", Revision: "r1", Phase: kraanv1.RolloutComplete}, v2)
	entries["fleet/canary"] = kraanv1.LayerClusterStatus{State: kraanv1.FailedState, Reason: kraanv1.ReasonLayerTestFailed,
		Message: "layer test Job apps/smoke failed", Version: "v2", Revision: "r2", DeployedVersion: "v1", DeployedRevision: "r1"}

	assessed := Assess(rollout, members, entries, true)
	g.Expect(assessed.Phase).To(Equal(kraanv1.RolloutHalted))
	g.Expect(assessed.Wave).To(Equal("canary"))

	plan := PlanRollout(members, waves, entries, rollout, true)
	g.Expect(plan.Rollout.Phase).To(Equal(kraanv1.RolloutHalted))
	g.Expect(actionsOf(plan, members)).To(Equal([]Action{RollBack, RollBack, RollBack}),
		"the canary returns to v1; the others stay there")

	without := PlanRollout(members, waves, entries, rollout, false)
	g.Expect(actionsOf(without, members)).To(Equal([]Action{Wait, Wait, Wait}), "without rollback, nothing moves")

	entries["fleet/canary"] = deployedAt(v1)
	assessed = Assess(plan.Rollout, members, entries, true)
	g.Expect(assessed.Phase).To(Equal(kraanv1.RolloutRolledBack))
	g.Expect(NextRollout(&assessed, Target{Version: "v3", Revision: "r3"}).PreviousVersion).To(Equal("v1"),
		"a rolled-back version is not one to return to")
}

func TestPlanRollout_transientFailureDoesNotHalt(t *testing.T) {
	g := NewWithT(t)
	members, waves := fleetOf(t, 1)
	entries := allAt(members, v1)
	rollout := NextRollout(&kraanv1.RolloutStatus{Version: "v1", Revision: "r1", Phase: kraanv1.RolloutComplete}, v2)
	entries["fleet/canary"] = kraanv1.LayerClusterStatus{State: kraanv1.FailedState, Reason: kraanv1.ReasonApplyFailed,
		Version: "v2", Revision: "r2", DeployedVersion: "v1", DeployedRevision: "r1"}
	plan := PlanRollout(members, waves, entries, rollout, true)
	g.Expect(plan.Rollout.Phase).To(Equal(kraanv1.RolloutProgressing))
	g.Expect(actionsOf(plan, members)).To(Equal([]Action{Apply, Wait}))
}
