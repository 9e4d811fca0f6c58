package kit

import (
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Owned is one condition a kind owns, as it counts towards Ready.
type Owned struct {
	// Type of the condition.
	Type string
	// Failing is the status with which the condition keeps the object from
	// being Ready: True for negative-polarity conditions (Stalled,
	// Reconciling, Remediated), False for the others (Released).
	Failing metav1.ConditionStatus
	// UnknownReasons are reasons with which a failing condition makes Ready
	// Unknown rather than False: work in progress, not a failure.
	UnknownReasons []string
}

// Summary declares how a kind's Ready is derived from the conditions it owns.
type Summary struct {
	// Owned are the conditions that count, highest priority first: Ready
	// takes the status, reason and message of the first one failing.
	Owned []Owned
	// Success is the condition whose message Ready repeats when nothing
	// fails; when it is absent too, the object is not Ready (nothing has
	// been observed yet) and Ready says so with NotReadyReason.
	Success string
	// SuccessReason is Ready's reason when nothing fails; Success's own
	// reason when empty.
	SuccessReason string
	// NotReadyReason is Ready's reason when neither a failure nor the
	// success condition is present.
	NotReadyReason string
}

// Ready computes the Ready condition from conditions, for generation.
func (s Summary) Ready(conditions []metav1.Condition, generation int64) metav1.Condition {
	ready := metav1.Condition{Type: kraanv1.ReadyCondition, ObservedGeneration: generation}
	for _, owned := range s.Owned {
		c := apimeta.FindStatusCondition(conditions, owned.Type)
		if c == nil || c.Status != owned.Failing {
			continue
		}
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, c.Message
		if slices.Contains(owned.UnknownReasons, c.Reason) {
			ready.Status = metav1.ConditionUnknown
		}
		return ready
	}
	success := apimeta.FindStatusCondition(conditions, s.Success)
	if success == nil || success.Status != metav1.ConditionTrue {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, s.NotReadyReason, "Not reconciled yet"
		if success != nil {
			ready.Reason, ready.Message = success.Reason, success.Message
		}
		return ready
	}
	ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, success.Reason, success.Message
	if s.SuccessReason != "" {
		ready.Reason = s.SuccessReason
	}
	return ready
}

// SetReady writes the summary into conditions.
func (s Summary) SetReady(conditions *[]metav1.Condition, generation int64) {
	SetStatusCondition(conditions, s.Ready(*conditions, generation))
}

// SetCondition sets one condition at generation; a shorthand for the kinds'
// set<Cond>Condition functions.
func SetCondition(conditions *[]metav1.Condition, generation int64, condType string, status metav1.ConditionStatus, reason, message string) {
	SetStatusCondition(conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}
