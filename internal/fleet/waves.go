package fleet

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Names of the implicit waves.
const (
	// AllWave is the one wave of a placement that declares none.
	AllWave = "all"
	// RestWave holds the clusters no declared wave selects.
	RestWave = "rest"
)

// Target is a layer version, from one revision of its source.
type Target struct {
	Version  string
	Revision string
}

// String is version@revision.
func (t Target) String() string { return t.Version + "@" + t.Revision }

// IsZero says whether t names no version.
func (t Target) IsZero() bool { return t.Version == "" }

// Member is a selected cluster in its wave.
type Member struct {
	Cluster Cluster
	// Wave is the index of its wave; WaveName its name.
	Wave     int
	WaveName string
}

// Wave is a wave's name and how many of its clusters may take a version at
// once (0: all).
type Wave struct {
	Name          string
	MaxInProgress int
}

// AssignWaves puts each cluster in the first wave whose selector matches
// it, and those no wave matches in a last wave; it returns the members and
// the waves that have any, in order.
func AssignWaves(clusters []Cluster, specs []kraanv1.WaveSpec) ([]Member, []Wave, error) {
	waves := make([]Wave, 0, len(specs)+1)
	selectors := make([]labels.Selector, 0, len(specs))
	for _, w := range specs {
		sel, err := metav1.LabelSelectorAsSelector(&w.Selector)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.placement.waves[%s].selector: %w", w.Name, err)
		}
		selectors = append(selectors, sel)
		waves = append(waves, Wave{Name: w.Name, MaxInProgress: int(w.MaxInProgress)})
	}
	last := RestWave
	if len(specs) == 0 {
		last = AllWave
	}
	waves = append(waves, Wave{Name: last})
	members := make([]Member, 0, len(clusters))
	for _, c := range clusters {
		i := slices.IndexFunc(selectors, func(s labels.Selector) bool { return s.Matches(labels.Set(c.Labels)) })
		if i < 0 {
			i = len(waves) - 1
		}
		members = append(members, Member{Cluster: c, Wave: i, WaveName: waves[i].Name})
	}
	return members, waves, nil
}

// Action is what a pass does on a cluster.
type Action int

const (
	// Wait leaves the cluster as it is: its wave has not started, or the
	// wave is at its maxInProgress.
	Wait Action = iota
	// Apply brings the cluster to the rollout's version, or keeps it there.
	Apply
	// RollBack brings the cluster back to the rollout's previous version.
	RollBack
)

// Plan is what one pass of a placed layer does.
type Plan struct {
	// Rollout is the rollout's status before the pass ran.
	Rollout kraanv1.RolloutStatus
	// Actions are per cluster key; Why says why a cluster waits.
	Actions map[string]Action
	Why     map[string]string
}

// haltReasons fail a wave: the version itself is at fault. Other failures
// (an API error, an ownership conflict, an unreachable cluster) are retried
// without stopping the rollout.
var haltReasons = []string{kraanv1.ReasonLayerTestFailed, kraanv1.ReasonHealthCheckFailed}

// Deployed says whether entry is t, fully deployed.
func Deployed(entry kraanv1.LayerClusterStatus, t Target) bool {
	return entry.State == kraanv1.DeployedState && entry.DeployedVersion == t.Version && entry.DeployedRevision == t.Revision
}

// failedAt says whether entry failed at t for a reason that halts a rollout.
func failedAt(entry kraanv1.LayerClusterStatus, t Target) bool {
	return entry.State == kraanv1.FailedState && entry.Version == t.Version && entry.Revision == t.Revision &&
		slices.Contains(haltReasons, entry.Reason)
}

// touched says whether the rollout of t reached the cluster.
func touched(entry kraanv1.LayerClusterStatus, t Target) bool {
	return (entry.Version == t.Version && entry.Revision == t.Revision) ||
		(entry.DeployedVersion == t.Version && entry.DeployedRevision == t.Revision)
}

// NextRollout is the rollout of target, continuing old when old is target's.
// A new target starts from old's version when old completed (the version
// every cluster runs), otherwise from old's previous version: a rollout that
// did not complete is not a version to return to.
func NextRollout(old *kraanv1.RolloutStatus, target Target) kraanv1.RolloutStatus {
	if old != nil && old.Version == target.Version && old.Revision == target.Revision {
		return *old
	}
	next := kraanv1.RolloutStatus{Version: target.Version, Revision: target.Revision, Phase: kraanv1.RolloutProgressing}
	if old != nil {
		next.PreviousVersion, next.PreviousRevision = old.PreviousVersion, old.PreviousRevision
		if old.Phase == kraanv1.RolloutComplete {
			next.PreviousVersion, next.PreviousRevision = old.Version, old.Revision
		}
	}
	return next
}

// Previous is the rollout's previous version.
func Previous(r kraanv1.RolloutStatus) Target {
	return Target{Version: r.PreviousVersion, Revision: r.PreviousRevision}
}

// PlanRollout decides what this pass does on each member, from the entries
// the last pass wrote (by cluster key). Waves go in order: a wave starts once
// every reachable member of the waves before it is Deployed at the target;
// within a wave at most MaxInProgress members take the target at once; a
// member that failed its health check or a layer test at the target halts
// the rollout, and with rollback every member the rollout reached returns to
// the previous version. Unreachable members are retried and hold nothing
// back.
func PlanRollout(members []Member, waves []Wave, entries map[string]kraanv1.LayerClusterStatus,
	rollout kraanv1.RolloutStatus, rollback bool) Plan {
	target := Target{Version: rollout.Version, Revision: rollout.Revision}
	plan := Plan{Rollout: rollout, Actions: map[string]Action{}, Why: map[string]string{}}
	if rollout.Phase == kraanv1.RolloutProgressing {
		for _, m := range members {
			if e := entries[m.Cluster.Key]; failedAt(e, target) {
				plan.Rollout.Phase, plan.Rollout.Wave = kraanv1.RolloutHalted, m.WaveName
				plan.Rollout.Message = fmt.Sprintf("cluster %s failed version %s: %s", m.Cluster.Key, target.Version, e.Message)
				break
			}
		}
	}
	if plan.Rollout.Phase == kraanv1.RolloutHalted || plan.Rollout.Phase == kraanv1.RolloutRolledBack {
		planHalted(&plan, members, entries, rollback)
		return plan
	}
	open := -1 // the first wave not done
	for w := range waves {
		if open >= 0 {
			for _, m := range members {
				if m.Wave == w {
					plan.Why[m.Cluster.Key] = fmt.Sprintf("waiting for wave %s", waves[open].Name)
				}
			}
			continue
		}
		if !planWave(&plan, members, entries, waves[w], w) {
			open = w
			plan.Rollout.Wave = waves[w].Name
		}
	}
	return plan
}

// planHalted plans a halted rollout: with rollback, every member the
// rollout reached returns to the previous version, and those at it keep
// correcting drift; without, only members Deployed at the target do.
func planHalted(plan *Plan, members []Member, entries map[string]kraanv1.LayerClusterStatus, rollback bool) {
	target := Target{Version: plan.Rollout.Version, Revision: plan.Rollout.Revision}
	previous := Previous(plan.Rollout)
	for _, m := range members {
		e := entries[m.Cluster.Key]
		switch {
		case rollback && !previous.IsZero() && (touched(e, target) || touched(e, previous)):
			plan.Actions[m.Cluster.Key] = RollBack
		case Deployed(e, target):
			plan.Actions[m.Cluster.Key] = Apply
		default:
			plan.Why[m.Cluster.Key] = "the rollout of version " + target.Version + " is halted: " + plan.Rollout.Message
		}
	}
}

// planWave plans the members of wave index w and says whether the wave is
// done: every reachable member Deployed at the target.
func planWave(plan *Plan, members []Member, entries map[string]kraanv1.LayerClusterStatus, wave Wave, w int) bool {
	target := Target{Version: plan.Rollout.Version, Revision: plan.Rollout.Revision}
	inProgress, done := 0, true
	var queued []Member
	for _, m := range members {
		if m.Wave != w {
			continue
		}
		e := entries[m.Cluster.Key]
		switch {
		case Deployed(e, target), e.State == kraanv1.UnreachableState:
			plan.Actions[m.Cluster.Key] = Apply // an unreachable one is retried, and holds nothing back
		case e.Version == target.Version && e.Revision == target.Revision:
			plan.Actions[m.Cluster.Key] = Apply
			inProgress++
			done = false
		default:
			queued = append(queued, m)
			done = false
		}
	}
	for _, m := range queued {
		if wave.MaxInProgress > 0 && inProgress >= wave.MaxInProgress {
			plan.Why[m.Cluster.Key] = fmt.Sprintf("queued in wave %s: %d clusters in progress (maxInProgress %d)",
				wave.Name, inProgress, wave.MaxInProgress)
			continue
		}
		plan.Actions[m.Cluster.Key] = Apply
		inProgress++
	}
	return done
}

// Assess sets the rollout's phase and message from the entries a pass left:
// Complete once every reachable member is Deployed at the target, Halted
// when one failed it, RolledBack once every member the rollout reached is
// back at the previous version.
func Assess(rollout kraanv1.RolloutStatus, members []Member, entries map[string]kraanv1.LayerClusterStatus, rollback bool) kraanv1.RolloutStatus {
	target := Target{Version: rollout.Version, Revision: rollout.Revision}
	previous := Previous(rollout)
	switch rollout.Phase {
	case kraanv1.RolloutHalted:
		if !rollback || previous.IsZero() {
			return rollout
		}
		for _, m := range members {
			e := entries[m.Cluster.Key]
			if touched(e, target) || (e.Version == previous.Version && !Deployed(e, previous)) {
				return rollout
			}
		}
		rollout.Phase = kraanv1.RolloutRolledBack
		rollout.Message = fmt.Sprintf("version %s failed in wave %s and every cluster it reached is back at version %s: %s",
			target.Version, rollout.Wave, previous.Version, strings.TrimPrefix(rollout.Message, "rolling back: "))
		return rollout
	case kraanv1.RolloutProgressing:
	default:
		return rollout
	}
	var unreachable []string
	deployed := 0
	for _, m := range members {
		e := entries[m.Cluster.Key]
		switch {
		case failedAt(e, target):
			rollout.Phase, rollout.Wave = kraanv1.RolloutHalted, m.WaveName
			rollout.Message = fmt.Sprintf("cluster %s failed version %s: %s", m.Cluster.Key, target.Version, e.Message)
			return rollout
		case Deployed(e, target):
			deployed++
		case e.State == kraanv1.UnreachableState:
			unreachable = append(unreachable, m.Cluster.Key)
		}
	}
	if deployed+len(unreachable) == len(members) {
		rollout.Phase, rollout.Wave = kraanv1.RolloutComplete, ""
	}
	rollout.Message = fmt.Sprintf("%d of %d clusters Deployed at version %s", deployed, len(members), target.Version)
	if len(unreachable) > 0 {
		rollout.Message += fmt.Sprintf("; unreachable, retried: %s", strings.Join(unreachable, ", "))
	}
	return rollout
}
