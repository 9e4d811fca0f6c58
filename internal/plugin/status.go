package plugin

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// state is an object's status in one word, its tone and its Ready message.
type state struct {
	word    string
	tone    tone
	message string
}

// layerState is the layer's status.state (Kraan's states), toned.
func layerState(l *kraanv1.AddonsLayer) state {
	ready := apimeta.FindStatusCondition(l.Status.Conditions, kraanv1.ReadyCondition)
	s := state{word: l.Status.State}
	if ready != nil {
		s.message = ready.Message
	}
	switch s.word {
	case "":
		s.word, s.tone = "Unknown", toneBusy
	case kraanv1.DeployedState:
		s.tone = toneGood
	case kraanv1.FailedState:
		s.tone = toneBad
	default:
		s.tone = toneBusy
	}
	return s
}

// releaseState is Ready, Failed, Stalled, Suspended or Progressing, from the
// HelmRelease's conditions at its generation.
func releaseState(hr *kraanv1.HelmRelease) state {
	return conditionsState(hr.Status.Conditions, hr.Generation, hr.Status.ObservedGeneration, hr.Spec.Suspend)
}

func conditionsState(conds []metav1.Condition, generation, observed int64, suspended bool) state {
	ready := apimeta.FindStatusCondition(conds, kraanv1.ReadyCondition)
	var s state
	if ready != nil {
		s.message = ready.Message
	}
	switch {
	case suspended:
		s.word, s.tone = "Suspended", toneBusy
	case ready == nil || observed != generation:
		s.word, s.tone = "Progressing", toneBusy
	case ready.Status == metav1.ConditionTrue:
		s.word, s.tone = "Ready", toneGood
	case apimeta.IsStatusConditionTrue(conds, kraanv1.StalledCondition):
		s.word, s.tone = "Stalled", toneBad
	case ready.Status == metav1.ConditionFalse && !apimeta.IsStatusConditionTrue(conds, kraanv1.ReconcilingCondition):
		s.word, s.tone = "Failed", toneBad
	default:
		s.word, s.tone = "Progressing", toneBusy
	}
	return s
}

// helmRevision is the Helm revision of the release's newest snapshot.
func helmRevision(hr *kraanv1.HelmRelease) int {
	best := 0
	for _, s := range hr.Status.History {
		best = max(best, s.Version)
	}
	return best
}
