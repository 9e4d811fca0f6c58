package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddonsLayer states, Kraan's values for status.state. Kraan users script
// against them (`kubectl get al`), so they are kept verbatim.
const (
	// HoldState means spec.hold is set: nothing is applied or pruned.
	HoldState = "Hold"
	// PendingState means the layer's source has no usable artifact yet.
	PendingState = "Pending"
	// K8sVersionState means the API server is older than prereqs.k8sVersion.
	K8sVersionState = "K8sVersion"
	// ApplyPendingState means the layer waits for the layers it depends on.
	ApplyPendingState = "ApplyPending"
	// ApplyingState means objects are applied and the layer waits for them to be healthy.
	ApplyingState = "Applying"
	// PruningState means objects removed from the source are being deleted.
	PruningState = "Pruning"
	// DeployedState means every object of the current version is applied and healthy.
	DeployedState = "Deployed"
	// FailedState means the last attempt failed; the message says why.
	FailedState = "Failed"
)

// Source kinds an AddonsLayer can read its objects from.
const (
	// GitRepositoryKind is a Flux source.toolkit.fluxcd.io GitRepository (the default).
	GitRepositoryKind = "GitRepository"
	// OCIRepositoryKind is a Flux source.toolkit.fluxcd.io OCIRepository.
	OCIRepositoryKind = "OCIRepository"
	// BucketKind is a Flux source.toolkit.fluxcd.io Bucket.
	BucketKind = "Bucket"
	// KraanGitRepositoryKind is the spelling Kraan's documentation used for
	// source.kind (resource.group); it means GitRepository and is accepted so
	// Kraan manifests apply unchanged. The other kinds' resource.group
	// spellings are accepted alike.
	KraanGitRepositoryKind = "gitrepositories.source.toolkit.fluxcd.io"
	// HelmChartKind is a Flux source.toolkit.fluxcd.io HelmChart, a chart
	// source of HelmReleases (spec.chartRef).
	HelmChartKind = "HelmChart"
	// ExternalArtifactKind is a Flux source.toolkit.fluxcd.io
	// ExternalArtifact (Flux 2.7+): an artifact another controller
	// produces, a chart source of HelmReleases (spec.chartRef).
	ExternalArtifactKind = "ExternalArtifact"
	// KraanOCIRepositoryKind is OCIRepository in resource.group spelling.
	KraanOCIRepositoryKind = "ocirepositories.source.toolkit.fluxcd.io"
	// KraanBucketKind is Bucket in resource.group spelling.
	KraanBucketKind = "buckets.source.toolkit.fluxcd.io"
)

// AddonsLayerSpec is the desired state of a layer: which directory of which Flux
// source holds its objects, and when it may be applied.
type AddonsLayerSpec struct {
	// Version of the layer. Layers that depend on this one name it as
	// `<layer>@<version>`; a new version re-runs the layer's tests.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[^@\s]+$`
	Version string `json:"version"`

	// Source is the Flux source artifact and the directory in it that holds the
	// layer's objects.
	// +required
	Source SourceSpec `json:"source"`

	// Prereqs are conditions that must hold before the layer is applied.
	// +optional
	Prereqs PrereqsSpec `json:"prereqs,omitempty"`

	// Hold stops all work on the layer: nothing is applied or pruned and the
	// layer's HelmReleases are suspended until hold is removed.
	// +optional
	Hold bool `json:"hold,omitempty"`

	// Interval is how often the layer is reconciled to correct drift, and the grace
	// period during which an object removed from this layer may be adopted by
	// another layer before it is pruned.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Interval metav1.Duration `json:"interval,omitempty"`

	// Timeout is how long the layer may stay Applying or Pruning before it is
	// reported Failed. It keeps retrying after that.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Timeout metav1.Duration `json:"timeout,omitempty"`

	// Placement applies the layer to registered clusters (FleetClusters,
	// Cluster API Clusters) chosen by label, in waves, instead of the
	// cluster the operator runs in. See docs/fleets.md.
	// +optional
	Placement *PlacementSpec `json:"placement,omitempty"`
}

// SourceSpec names a Flux source and a directory inside its artifact.
type SourceSpec struct {
	// Kind of the Flux source. Empty means GitRepository: Kraan's controller
	// writes `kind: ""` whenever it updates a layer that set none, so live
	// Kraan layers carry it.
	// +optional
	// +kubebuilder:default=GitRepository
	// +kubebuilder:validation:Enum=GitRepository;OCIRepository;Bucket;gitrepositories.source.toolkit.fluxcd.io;ocirepositories.source.toolkit.fluxcd.io;buckets.source.toolkit.fluxcd.io;""
	Kind string `json:"kind,omitempty"`

	// Name of the Flux source.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the Flux source; defaults to the operator's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Path of the layer's directory inside the artifact, starting with `./`.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^\./`
	Path string `json:"path"`
}

// PrereqsSpec lists what must hold before a layer is applied.
type PrereqsSpec struct {
	// K8sVersion is the minimum Kubernetes API server version, e.g. `v1.30`.
	// The leading `v` is optional: `1.30` and `v1.30` are the same version
	// (Kraan's own samples write `"1.16"`). Empty means no minimum.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z.-]+)?)?$`
	K8sVersion string `json:"k8sVersion,omitempty"`

	// DependsOn lists the layers, as `<name>@<version>`, that must be Deployed at
	// that version before this layer is applied.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?@[^@\s]+$`
	// +kubebuilder:validation:items:MaxLength=384
	// +listType=set
	DependsOn []string `json:"dependsOn,omitempty"`
}

// AddonsLayerStatus is the observed state of a layer.
type AddonsLayerStatus struct {
	// State is the layer's current state, one of Kraan's: Hold, Pending,
	// K8sVersion, ApplyPending, Applying, Pruning, Deployed, Failed.
	// +optional
	State string `json:"state,omitempty"`

	// Version is the spec.version this status describes.
	// +optional
	Version string `json:"version,omitempty"`

	// Revision is the source artifact revision last fully deployed.
	// +optional
	Revision string `json:"revision,omitempty"`

	// ObservedGeneration is the generation last fully handled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Resources is the layer's inventory: every object it applied.
	// +optional
	// +listType=atomic
	Resources []Resource `json:"resources,omitempty"`

	// Conditions, one per type: Ready, Reconciling, Stalled, SourceReady,
	// PrerequisitesMet, Deployed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Clusters is a placed layer's state on each cluster it is placed on.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Clusters []LayerClusterStatus `json:"clusters,omitempty"`

	// Rollout is the progress of a placed layer's version across its clusters.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// Resource is one object applied by a layer.
type Resource struct {
	// APIVersion of the object.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the object.
	// +required
	Kind string `json:"kind"`
	// Namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	// +required
	Name string `json:"name"`
	// Status of the object: Deployed when healthy, otherwise its latest reason.
	// +optional
	Status string `json:"status,omitempty"`
	// LastTransitionTime is when Status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// WrittenByKraan reports whether Kraan's controller, not this operator, wrote
// this inventory entry, before the operator took the layer over. Kraan names
// the kind as resource.group ("helmreleases.helm.toolkit.fluxcd.io") and gives
// no apiVersion; every entry the operator writes carries the object's
// apiVersion. What such an entry names is Kraan's: a Flux HelmRelease Kraan
// applied, with a controller ownerReference to the layer. The operator never
// releases, prunes or reads it as part of the layer.
func (r Resource) WrittenByKraan() bool { return r.APIVersion == "" }

// AddonsLayer is an ordered, versioned layer of cluster add-ons read from a
// directory of a Flux source artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={al,layer,addonlayer},categories={kraan}
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.name`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.source.path`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AddonsLayer struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AddonsLayerSpec `json:"spec"`
	// +optional
	Status AddonsLayerStatus `json:"status,omitempty"`
}

// GetConditions returns the layer's conditions.
func (in *AddonsLayer) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the layer's conditions.
func (in *AddonsLayer) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// AddonsLayerList is a list of AddonsLayers.
type AddonsLayerList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddonsLayer `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &AddonsLayer{}, &AddonsLayerList{})
}
