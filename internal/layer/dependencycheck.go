package layer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// DependencyState is what the reconciler read, fresh from the API server (not
// from a possibly stale cache: Kraan #64), about a layer another layer depends on.
type DependencyState struct {
	// Exists is false when the layer was not found; the other fields are then ignored.
	Exists bool
	// SpecVersion is the layer's spec.version. Optional: when set, a dependsOn
	// version the layer is not even asked to reach is called out in the message.
	SpecVersion string
	// Generation is the layer's metadata.generation.
	Generation int64
	// ObservedGeneration is the layer's status.observedGeneration.
	ObservedGeneration int64
	// Version is the layer's status.version.
	Version string
	// State is the layer's status.state, one of Kraan's states (kraanv1.DeployedState…).
	State string
	// Revision is the layer's status.revision: the source revision it last deployed.
	Revision string
	// Deployed is the status of the layer's Deployed condition; empty when absent.
	Deployed metav1.ConditionStatus
	// AwaitsTakeOver is true while the layer's status is still Kraan's
	// (kraanv1.AddonsLayer.AwaitsTakeOver): what it says was deployed, the
	// operator has not deployed, so a dependent waits for the take-over of
	// its dependencies first.
	AwaitsTakeOver bool
	// SourceRevision is the revision of the layer's source artifact now. Leave it
	// empty when the source has no usable artifact (not Ready, or not yet
	// reconciled for its current generation): the dependent then waits, as it did
	// in Kraan.
	SourceRevision string
}

// CheckDependency reports whether dep is satisfied by the observed layer, and
// if not, why, in Kraan's ApplyPending wording followed by what is awaited.
// A missing layer is a wait, not a failure (Kraan set Failed; its docs said wait).
//
// It is met only when the layer has handled its latest generation, is Deployed
// at dep.Version with a True Deployed condition, and has deployed the revision
// its source holds now. The last check keeps dependents from running ahead when
// a shared source moves to a new commit, and the generation check keeps them
// from trusting a status written before a version bump (Kraan #64).
func CheckDependency(dep Dependency, observed *DependencyState) (bool, string) {
	waiting := fmt.Sprintf("Waiting for layer: %s, version: %s to be applied. Layer: %s, ", dep.Name, dep.Version, dep.Name)
	switch {
	case observed == nil || !observed.Exists:
		return false, waiting + "not found: create it or correct prereqs.dependsOn."
	case observed.AwaitsTakeOver:
		return false, fmt.Sprintf("%sis still Kraan's: take it over first (kubectl kraan takeover %s).", waiting, dep.Name)
	case observed.SpecVersion != "" && observed.SpecVersion != dep.Version:
		return false, fmt.Sprintf("%sspec.version is: %s, require version: %s: change that layer's version or this layer's prereqs.dependsOn.",
			waiting, observed.SpecVersion, dep.Version)
	case observed.ObservedGeneration != observed.Generation:
		return false, fmt.Sprintf("%sobserved generation: %d, generation: %d.",
			waiting, observed.ObservedGeneration, observed.Generation)
	case observed.Version != dep.Version:
		return false, fmt.Sprintf("%scurrent version is: %s, require version: %s.", waiting, observed.Version, dep.Version)
	case observed.State != kraanv1.DeployedState || observed.Deployed != metav1.ConditionTrue:
		return false, fmt.Sprintf("%scurrent state: %s.", waiting, stateOrUnknown(observed.State))
	case observed.SourceRevision == "":
		return false, waiting + "its source has no ready artifact."
	case observed.Revision != observed.SourceRevision:
		return false, fmt.Sprintf("Waiting for layer: %s, to apply source revision: %s. Layer: %s, current state: %s, deployed revision: %s.",
			dep.Name, observed.SourceRevision, dep.Name, observed.State, observed.Revision)
	}
	return true, fmt.Sprintf("layer %s is Deployed at version %s, revision %s", dep.Name, dep.Version, observed.Revision)
}

// CheckDependencies checks deps in order and returns the first unmet one's
// message, as Kraan did, so the message names one thing to wait for. lookup
// returns the observed state of a layer, nil when it was not found.
func CheckDependencies(deps []Dependency, lookup func(name string) *DependencyState) (bool, string) {
	for _, dep := range deps {
		if met, msg := CheckDependency(dep, lookup(dep.Name)); !met {
			return false, msg
		}
	}
	if len(deps) == 0 {
		return true, "no layer dependencies"
	}
	return true, fmt.Sprintf("all %d layer dependencies are Deployed", len(deps))
}

func stateOrUnknown(state string) string {
	if state == "" {
		return "<none>"
	}
	return state
}
