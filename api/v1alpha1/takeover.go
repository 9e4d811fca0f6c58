package v1alpha1

import apimeta "k8s.io/apimachinery/pkg/api/meta"

// TakeOverAnnotation hands a layer that Kraan's controller handled to the
// operator. Its value is when (RFC 3339); `kubectl kraan takeover` sets it,
// dependencies first. Until a layer Kraan left behind carries it, the
// operator writes nothing: not to the layer (no finalizer, no status), not to
// what the layer applied, and it creates no HelmRelease for it. Installing
// the operator next to a running Kraan therefore changes nothing.
const TakeOverAnnotation = "kraan.io/take-over"

// AwaitsTakeOver says whether the layer's status was written by another
// controller and the layer was not handed to the operator yet.
//
// Kraan's controller writes a status whose only condition is named after the
// state (Hold, Pending, K8sVersion, ApplyPending, Applying, Pruning, Deployed,
// Failed), never Ready; the operator writes Ready on every status patch, from
// its first release on. So a status without Ready is Kraan's. The rule reads
// the status, not Kraan's finalizer: both controllers use the same finalizer,
// and the operator adds it before its first status patch, so a layer with
// the finalizer and no status yet is the operator's own (it stopped in
// between), and a layer nobody handled yet is the operator's from the start.
func (l *AddonsLayer) AwaitsTakeOver() bool {
	if _, ok := l.Annotations[TakeOverAnnotation]; ok {
		return false
	}
	written := l.Status.State != "" || len(l.Status.Conditions) > 0
	return written && apimeta.FindStatusCondition(l.Status.Conditions, ReadyCondition) == nil
}
