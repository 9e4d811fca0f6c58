package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every string of a Habitat reaches the chart's templates: each has an
// anchored pattern and a maximum length, so no value can carry a newline or
// YAML syntax into the rendered objects even where a template forgot to
// quote it (the chart quotes every value as well).

// Habitat topologies, the supervisor's --topology.
const (
	// TopologyNone runs services without a topology flag.
	TopologyNone = "none"
	// TopologyStandalone runs independent service members.
	TopologyStandalone = "standalone"
	// TopologyLeader elects a leader among at least three members.
	TopologyLeader = "leader"
)

// HabitatSpec is the desired state of a group of Habitat supervisors.
//
// +kubebuilder:validation:XValidation:rule="self.service.topology != 'leader' || self.count >= 3",message="a leader topology needs count >= 3: a Habitat leader election needs at least three members"
type HabitatSpec struct {
	// Image is a Habitat-exported container image (`hab pkg export container`).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`
	Image string `json:"image"`

	// Count of supervisors (StatefulSet replicas).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Count int32 `json:"count,omitempty"`

	// Service is the Habitat service the supervisors run.
	// +required
	Service ServiceSpec `json:"service"`

	// Env of the supervisor container.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []EnvVar `json:"env,omitempty"`

	// PersistentStorage, when set, gives every supervisor a volume claim.
	// +optional
	PersistentStorage *PersistentStorage `json:"persistentStorage,omitempty"`

	// Resources of the supervisor container.
	// +optional
	Resources *ResourceRequirements `json:"resources,omitempty"`
}

// ServiceSpec describes the Habitat service.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.ringSecretName) && has(self.generateRingKey) && self.generateRingKey)",message="set either ringSecretName or generateRingKey, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.generateRingKey) || !self.generateRingKey || has(self.ring)",message="generateRingKey needs ring: the name of the ring the key is generated for"
type ServiceSpec struct {
	// Name of the Habitat service (package), used for its paths
	// `/hab/user/<name>/config` and `/hab/svc/<name>`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Name string `json:"name"`

	// Topology of the service group.
	// +optional
	// +kubebuilder:default=none
	// +kubebuilder:validation:Enum=none;standalone;leader
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:Pattern=`^(none|standalone|leader)$`
	Topology string `json:"topology,omitempty"`

	// Group of the service (the supervisor's --group); the supervisor defaults to `default`.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Group string `json:"group,omitempty"`

	// Channel the service's package updates follow (the supervisor's --channel).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]*$`
	Channel string `json:"channel,omitempty"`

	// ConfigSecretName is a Secret whose key `user.toml` configures the service.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ConfigSecretName string `json:"configSecretName,omitempty"`

	// Ring is the name of the ring the supervisors gossip on. Habitats of one
	// namespace on the same ring share one peer list, so binds work across them.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Ring string `json:"ring,omitempty"`

	// RingSecretName is a Secret holding the ring key under `ring-key`, named
	// `<ring>-<YYYYMMDDhhmmss>` as `hab ring key generate` names keys.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?-[0-9]{14}$`
	RingSecretName string `json:"ringSecretName,omitempty"`

	// GenerateRingKey has the operator generate a ring key for Ring, once, and keep it.
	// +optional
	GenerateRingKey bool `json:"generateRingKey,omitempty"`

	// Bind lists the services this one binds to (the supervisor's --bind).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Bind []Bind `json:"bind,omitempty"`
}

// Bind connects a bind name of this service's plan to a producer service group.
type Bind struct {
	// Name of the bind in the consumer's plan (pkg_binds).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Name string `json:"name"`
	// Service that produces the bind.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Service string `json:"service"`
	// Group of the producing service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Group string `json:"group"`
}

// PersistentStorage is a volume claim per supervisor.
type PersistentStorage struct {
	// Size of the volume.
	// +required
	Size resource.Quantity `json:"size"`
	// MountPath in the container, e.g. `/hab/svc/redis/data`: an absolute
	// path of letters, digits and `._@+-`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/@+-]*$`
	MountPath string `json:"mountPath"`
	// StorageClassName of the claim; the cluster default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName string `json:"storageClassName,omitempty"`
}

// EnvVar is an environment variable of the supervisor container: the
// fields of Kubernetes' EnvVar a Habitat uses, each bounded.
type EnvVar struct {
	// Name of the variable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	Name string `json:"name"`
	// Value of the variable; no control characters but tab and line breaks.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	// +kubebuilder:validation:Pattern=`^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F]*$`
	Value string `json:"value,omitempty"`
	// ValueFrom reads the value from a key of a ConfigMap or Secret of the
	// Habitat's namespace, a field of the pod or a resource of a container.
	// +optional
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where an environment variable's value comes from; set one.
//
// +kubebuilder:validation:XValidation:rule="(has(self.configMapKeyRef) ? 1 : 0) + (has(self.secretKeyRef) ? 1 : 0) + (has(self.fieldRef) ? 1 : 0) + (has(self.resourceFieldRef) ? 1 : 0) == 1",message="set exactly one of configMapKeyRef, secretKeyRef, fieldRef, resourceFieldRef"
type EnvVarSource struct {
	// ConfigMapKeyRef selects a key of a ConfigMap.
	// +optional
	ConfigMapKeyRef *KeySelector `json:"configMapKeyRef,omitempty"`
	// SecretKeyRef selects a key of a Secret.
	// +optional
	SecretKeyRef *KeySelector `json:"secretKeyRef,omitempty"`
	// FieldRef selects a field of the pod, e.g. `status.podIP`.
	// +optional
	FieldRef *FieldSelector `json:"fieldRef,omitempty"`
	// ResourceFieldRef selects a resource of a container, e.g. `limits.memory`.
	// +optional
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
}

// KeySelector names a key of a ConfigMap or Secret of the Habitat's namespace.
type KeySelector struct {
	// Name of the ConfigMap or Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key in its data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
	// Optional lets the container start when the object or key is missing.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// FieldSelector selects a field of the pod.
type FieldSelector struct {
	// APIVersion the path is written in; v1 when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9.-]+/)?v[0-9]+((alpha|beta)[0-9]+)?$`
	APIVersion string `json:"apiVersion,omitempty"`
	// FieldPath of the field, e.g. `metadata.name` or `metadata.labels['app']`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.\[\]'/_-]+$`
	FieldPath string `json:"fieldPath"`
}

// ResourceFieldSelector selects a resource of a container of the pod.
type ResourceFieldSelector struct {
	// ContainerName of the container; the supervisor's when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ContainerName string `json:"containerName,omitempty"`
	// Resource, e.g. `limits.cpu`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9./_-]+$`
	Resource string `json:"resource"`
	// Divisor of the value, 1 when unset.
	// +optional
	Divisor *resource.Quantity `json:"divisor,omitempty"`
}

// ResourceRequirements are the supervisor container's requests, limits and
// claims: Kubernetes' ResourceRequirements, bounded.
type ResourceRequirements struct {
	// Limits by resource name, e.g. `cpu: 500m`.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9][A-Za-z0-9./_-]{0,252}$'))",message="resource names are letters, digits and ./_- , at most 253 characters"
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Requests by resource name, e.g. `memory: 256Mi`.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9][A-Za-z0-9./_-]{0,252}$'))",message="resource names are letters, digits and ./_- , at most 253 characters"
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Claims name resource claims of the pod the container uses.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Claims []ResourceClaim `json:"claims,omitempty"`
}

// ResourceClaim names a resource claim of the pod.
type ResourceClaim struct {
	// Name of the claim in the pod's resourceClaims.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Request of the claim, when it has several.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Request string `json:"request,omitempty"`
}

// HabitatStatus is the observed state of a Habitat.
type HabitatStatus struct {
	// ObservedGeneration is the generation last fully handled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas of the StatefulSet.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Peers are the IPs of the ring's Running supervisors.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=45
	Peers []string `json:"peers,omitempty"`
	// RingKeySecretName is the Secret holding the ring key in use.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RingKeySecretName string `json:"ringKeySecretName,omitempty"`
	// DeployedRelease is the Helm release rendered for this Habitat.
	// +optional
	DeployedRelease *DeployedRelease `json:"deployedRelease,omitempty"`
	// Conditions, one per type: Ready, Reconciling, Stalled, Initialized,
	// Deployed, ReleaseFailed, Irreconcilable.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// DeployedRelease names the Helm release of a chart-backed object. It never
// holds the rendered manifest, which may hold Secret data.
type DeployedRelease struct {
	// Name of the release.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Revision is the newest revision of the release in storage.
	// +optional
	Revision int32 `json:"revision,omitempty"`
	// Status of that revision, as Helm says it: deployed, failed,
	// pending-install…
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Status string `json:"status,omitempty"`
}

// Habitat is a group of Chef Habitat supervisors running one service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName={hab},categories={kraan}
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Count",type=integer,JSONPath=`.spec.count`
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.service.topology`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Habitat struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec HabitatSpec `json:"spec"`
	// +optional
	Status HabitatStatus `json:"status,omitempty"`
}

// GetConditions returns the Habitat's conditions.
func (in *Habitat) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the Habitat's conditions.
func (in *Habitat) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// HabitatList is a list of Habitats.
type HabitatList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Habitat `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &Habitat{}, &HabitatList{})
}
