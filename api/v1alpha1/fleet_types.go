package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fleet states: a placed layer's per-cluster states are Kraan's layer states
// (Deployed, Applying, Pruning, ApplyPending, K8sVersion, Failed) and these.
const (
	// UnreachableState means the operator could not reach the cluster: it is
	// reported, retried, and never holds back the clusters of other waves.
	UnreachableState = "Unreachable"
	// WaitingState means the cluster's wave has not started yet.
	WaitingState = "Waiting"
	// RollingBackState means the cluster returns to the previous layer
	// version after a failed wave.
	RollingBackState = "RollingBack"
)

// Rollout phases of a placed layer (status.rollout.phase).
const (
	// RolloutProgressing means the waves are being rolled out.
	RolloutProgressing = "Progressing"
	// RolloutComplete means every reachable cluster is Deployed at the version.
	RolloutComplete = "Complete"
	// RolloutHalted means a cluster failed its health or layer tests: no
	// further wave starts until the layer's version or revision changes.
	RolloutHalted = "Halted"
	// RolloutRolledBack means a halted rollout returned its clusters to the
	// previous version (spec.placement.rollbackOnFailure).
	RolloutRolledBack = "RolledBack"
)

// Reasons of placed layers' conditions.
const (
	// ReasonClusterUnreachable: a selected cluster could not be reached.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonRolloutHalted: a wave failed; the rollout stopped.
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonRolledBack: a failed wave's clusters returned to the previous version.
	ReasonRolledBack = "RolledBack"
	// ReasonInvalidPlacement: spec.placement cannot be used as written.
	ReasonInvalidPlacement = "InvalidPlacement"
	// ReasonNoClusters: the placement's selector chose no registered cluster.
	ReasonNoClusters = "NoClusters"
	// ReasonClusterReachable: a FleetCluster answered.
	ReasonClusterReachable = "ClusterReachable"
)

// PlacementSpec places a layer on registered clusters instead of the cluster
// the operator runs in.
type PlacementSpec struct {
	// ClusterSelector chooses the clusters, by the labels of their
	// registration (a FleetCluster, or a Cluster API Cluster) in one of the
	// platform's namespaces.
	// +required
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`

	// Waves roll a new version out in order: a cluster belongs to the first
	// wave whose selector matches it, a cluster no wave matches to an
	// implicit last wave. A wave starts once every reachable cluster of the
	// waves before it is Deployed at the version, its layer tests passed.
	// Empty: one wave of every cluster.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Waves []WaveSpec `json:"waves,omitempty"`

	// RollbackOnFailure returns every cluster that took the new version to
	// the previous one when a cluster of the rollout fails its health check
	// (spec.timeout) or a layer test.
	// +optional
	RollbackOnFailure bool `json:"rollbackOnFailure,omitempty"`
}

// WaveSpec is one step of a placed layer's rollout.
type WaveSpec struct {
	// Name of the wave, for the status.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Selector chooses the wave's clusters among the placement's.
	// +required
	Selector metav1.LabelSelector `json:"selector"`
	// MaxInProgress is how many of the wave's clusters take the new version
	// at once; 0 means all of them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxInProgress int32 `json:"maxInProgress,omitempty"`
}

// LayerClusterStatus is a placed layer on one cluster.
type LayerClusterStatus struct {
	// Cluster is the registration, as <namespace>/<name>.
	// +required
	Cluster string `json:"cluster"`
	// Wave is the name of the cluster's wave.
	// +optional
	Wave string `json:"wave,omitempty"`
	// State is the layer's state on the cluster.
	// +optional
	State string `json:"state,omitempty"`
	// Version and Revision are what the cluster is being brought to.
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Revision string `json:"revision,omitempty"`
	// DeployedVersion and DeployedRevision are what was last fully
	// Deployed on the cluster, its layer tests passed.
	// +optional
	DeployedVersion string `json:"deployedVersion,omitempty"`
	// +optional
	DeployedRevision string `json:"deployedRevision,omitempty"`
	// Leaving are the versions whose objects the cluster still holds,
	// released and pruned once their grace period (spec.interval) passed
	// unless another layer adopted them.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	Leaving []LayerVersion `json:"leaving,omitempty"`
	// Reason and Message say why the cluster is in its state.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when State or Version last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// LayerVersion is a layer version from one revision of its source.
type LayerVersion struct {
	// +required
	Version string `json:"version"`
	// +optional
	Revision string `json:"revision,omitempty"`
}

// RolloutStatus is the progress of a placed layer's current version.
type RolloutStatus struct {
	// Version and Revision are rolled out.
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Revision string `json:"revision,omitempty"`
	// PreviousVersion and PreviousRevision are what a failed rollout rolls back to.
	// +optional
	PreviousVersion string `json:"previousVersion,omitempty"`
	// +optional
	PreviousRevision string `json:"previousRevision,omitempty"`
	// Phase is Progressing, Complete, Halted or RolledBack.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Wave is the name of the wave in progress, or that failed.
	// +optional
	Wave string `json:"wave,omitempty"`
	// Message says why the rollout is in its phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// FleetClusterSpec registers a cluster the platform places layers on.
type FleetClusterSpec struct {
	// KubeConfig is the Secret, in the FleetCluster's namespace, holding
	// the kubeconfig that reaches the cluster (key "value" by default, as
	// Cluster API writes it). Its credentials must be inline: file
	// references, exec plugins and insecure-skip-tls-verify are refused.
	// +required
	KubeConfig KubeConfigReference `json:"kubeConfig"`
}

// FleetClusterStatus is what the operator last saw of the cluster.
type FleetClusterStatus struct {
	// KubernetesVersion is the cluster's API server version.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// ObservedGeneration is the generation last checked.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FleetCluster registers a cluster, by a kubeconfig Secret, for AddonsLayers
// placed by label (spec.placement). Only FleetClusters in the operator's
// namespace and --platform-namespaces are honoured: a tenant cannot
// register a cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName={fc},categories={kraan}
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FleetCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec FleetClusterSpec `json:"spec"`
	// +optional
	Status FleetClusterStatus `json:"status,omitempty"`
}

// GetConditions returns the cluster's conditions.
func (in *FleetCluster) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the cluster's conditions.
func (in *FleetCluster) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// FleetClusterList is a list of FleetClusters.
type FleetClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetCluster `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &FleetCluster{}, &FleetClusterList{})
}
