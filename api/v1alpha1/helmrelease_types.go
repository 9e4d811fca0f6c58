package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HelmReleaseSpec is the desired state of a Helm release. Field names and
// meanings follow Flux helm.toolkit.fluxcd.io/v2 so that Flux manifests convert
// field by field.
//
// +kubebuilder:validation:XValidation:rule="has(self.chart) != has(self.chartRef)",message="exactly one of spec.chart or spec.chartRef must be set"
type HelmReleaseSpec struct {
	// Chart is the template of the chart to install: its name or path, version
	// range and source.
	// +optional
	Chart *HelmChartTemplate `json:"chart,omitempty"`

	// ChartRef points at an OCIRepository or HelmChart whose artifact is the chart.
	// +optional
	ChartRef *CrossNamespaceSourceReference `json:"chartRef,omitempty"`

	// Interval at which the release is reconciled and checked for drift.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Interval metav1.Duration `json:"interval,omitempty"`

	// Suspend stops reconciliation; a suspended release is not uninstalled on deletion.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ReleaseName of the Helm release; defaults to `[targetNamespace-]name`,
	// shortened with a hash past 53 characters.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	ReleaseName string `json:"releaseName,omitempty"`

	// TargetNamespace the release's objects are installed in; defaults to the
	// HelmRelease's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// StorageNamespace holds Helm's release records; defaults to the HelmRelease's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// DependsOn lists HelmReleases that must be Ready before this one is reconciled.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`

	// Timeout of every Helm action unless the action sets its own.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// MaxHistory is how many release revisions Helm keeps; 0 keeps all.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	MaxHistory *int `json:"maxHistory,omitempty"`

	// ServiceAccountName is impersonated for every Helm action, so a release can do
	// only what that service account (in the HelmRelease's namespace) may do.
	// It must be a ServiceAccount name (a lowercase DNS-1123 subdomain): any
	// other value would be an impersonated user name no ServiceAccount can
	// hold, so it is refused when written rather than failing every reconcile.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.serviceAccountName must be a ServiceAccount name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (a DNS-1123 subdomain)"
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// KubeConfig installs the release into a remote cluster: every Helm
	// action, the release records and drift detection use the kubeconfig held
	// in a Secret of the HelmRelease's namespace, as Flux does. With it,
	// serviceAccountName names an account of the remote cluster to
	// impersonate, and --default-service-account does not apply.
	// +optional
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`

	// PersistentClient, as in Flux, reuses one Kubernetes client (discovery
	// and REST mapping) for every Helm action of the release; false gives each
	// action fresh ones, for charts that create CRDs outside Helm's CRD
	// handling and use them in hooks. Defaults to true.
	// +optional
	PersistentClient *bool `json:"persistentClient,omitempty"`

	// DriftDetection compares the release manifest with the cluster.
	// +optional
	DriftDetection *DriftDetection `json:"driftDetection,omitempty"`

	// Install configures `helm install`.
	// +optional
	Install *Install `json:"install,omitempty"`
	// Upgrade configures `helm upgrade`.
	// +optional
	Upgrade *Upgrade `json:"upgrade,omitempty"`
	// Test configures `helm test`.
	// +optional
	Test *Test `json:"test,omitempty"`
	// Rollback configures `helm rollback`.
	// +optional
	Rollback *Rollback `json:"rollback,omitempty"`
	// Uninstall configures `helm uninstall`.
	// +optional
	Uninstall *Uninstall `json:"uninstall,omitempty"`

	// ValuesFrom lists ConfigMaps and Secrets whose values are merged in order,
	// before Values. A change to one of them upgrades the release: at once
	// when it is labelled reconcile.fluxcd.io/watch: Enabled (the operator's
	// --watch-configs-label-selector), else at the next reconcile.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// Values are the chart's values, merged over ValuesFrom.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// CommonMetadata labels and annotations are set on every object the chart
	// renders, after the post-renderers, overriding keys the chart set.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// PostRenderers change the rendered manifest, in order, before install
	// and upgrade. A change to them upgrades the release.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	PostRenderers []PostRenderer `json:"postRenderers,omitempty"`

	// PostRenderStrategy says which of the rendered documents the
	// post-renderers (and commonMetadata) see, as in Flux: nohooks (the
	// templates only, Helm 3's behaviour), combined (hooks and templates in
	// one stream, Helm 4's) or separate (hooks and templates in two
	// streams). Unset is combined, or nohooks when the operator runs with
	// the UseHelm3Defaults feature gate.
	// +optional
	// +kubebuilder:validation:Enum=nohooks;combined;separate
	PostRenderStrategy PostRenderStrategy `json:"postRenderStrategy,omitempty"`

	// WaitStrategy is how an action that waits decides that its objects are
	// ready: poller (kstatus, for every object, custom resources included)
	// or legacy (Helm 3's checks). Unset is poller, or legacy under
	// UseHelm3Defaults.
	// +optional
	WaitStrategy *WaitStrategy `json:"waitStrategy,omitempty"`

	// HealthCheckExprs are CEL expressions that say when objects of an
	// apiVersion and kind are ready, in progress or failed, for kinds
	// kstatus cannot judge from their conditions. As in Flux they apply only
	// to actions that wait with the poller strategy.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`
}

// PostRenderStrategy says which rendered documents the post-renderers see.
type PostRenderStrategy string

// Post-render strategies, Flux's values.
const (
	// PostRenderStrategyNoHooks post-renders the templates only (Helm 3).
	PostRenderStrategyNoHooks PostRenderStrategy = "nohooks"
	// PostRenderStrategyCombined post-renders hooks and templates in one
	// stream (Helm 4's default).
	PostRenderStrategyCombined PostRenderStrategy = "combined"
	// PostRenderStrategySeparate post-renders hooks and templates in two
	// separate streams.
	PostRenderStrategySeparate PostRenderStrategy = "separate"
)

// WaitStrategyName names how an action waits for its objects.
type WaitStrategyName string

// Wait strategies, Flux's values.
const (
	// WaitStrategyPoller judges every object by kstatus (and
	// spec.healthCheckExprs for the kinds they name).
	WaitStrategyPoller WaitStrategyName = "poller"
	// WaitStrategyLegacy is Helm 3's wait: Deployments, StatefulSets,
	// DaemonSets, Jobs, Pods, PVCs and Services only.
	WaitStrategyLegacy WaitStrategyName = "legacy"
)

// WaitStrategy is how an action that waits decides its objects are ready.
type WaitStrategy struct {
	// Name of the strategy: poller or legacy.
	// +required
	// +kubebuilder:validation:Enum=poller;legacy
	Name WaitStrategyName `json:"name"`
}

// CustomHealthCheck says, in CEL over an object, when objects of one
// apiVersion and kind are ready, in progress or failed (Flux's
// kustomize.CustomHealthCheck), whose fields the expressions read by name
// (e.g. status.conditions).
type CustomHealthCheck struct {
	// APIVersion of the objects the expressions judge, e.g. "cert-manager.io/v1".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`
	// Kind of the objects the expressions judge.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`
	// Current is true when the object has reached its desired state.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Current string `json:"current"`
	// InProgress is true while the object is still on its way.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	InProgress string `json:"inProgress,omitempty"`
	// Failed is true when the object failed to reach its desired state.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Failed string `json:"failed,omitempty"`
}

// ServerSideApplyMode says whether an upgrade or rollback applies its
// objects server-side.
type ServerSideApplyMode string

// Server-side apply modes, Flux's values.
const (
	// ServerSideApplyEnabled applies server-side.
	ServerSideApplyEnabled ServerSideApplyMode = "enabled"
	// ServerSideApplyDisabled applies client-side (three-way merge patches).
	ServerSideApplyDisabled ServerSideApplyMode = "disabled"
	// ServerSideApplyAuto keeps the apply method of the release's last
	// revision (Helm's apply_method record field; empty is client-side).
	ServerSideApplyAuto ServerSideApplyMode = "auto"
)

// ChartNameChangeStrategy is what an upgrade to a chart of another name does.
type ChartNameChangeStrategy string

// Chart name change strategies, Flux's values.
const (
	// ChartNameChangeStrategyReinstall uninstalls the release and installs
	// the new chart.
	ChartNameChangeStrategyReinstall ChartNameChangeStrategy = "Reinstall"
	// ChartNameChangeStrategyInPlaceUpdate upgrades the release to the new
	// chart in place.
	ChartNameChangeStrategyInPlaceUpdate ChartNameChangeStrategy = "InPlaceUpdate"
)

// CommonMetadata are labels and annotations for every rendered object.
type CommonMetadata struct {
	// Annotations to set.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels to set.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// PostRenderer changes the rendered manifest.
// +kubebuilder:validation:XValidation:rule="has(self.kustomize)",message="a post-renderer must set kustomize, the only post-renderer kind"
type PostRenderer struct {
	// Kustomize patches and image overrides.
	// +optional
	Kustomize *KustomizePostRenderer `json:"kustomize,omitempty"`
}

// KustomizePostRenderer is a kustomization over the rendered manifest.
type KustomizePostRenderer struct {
	// Patches are strategic-merge or JSON 6902 patches, each optionally
	// limited to the objects its target selects.
	// +optional
	// +listType=atomic
	Patches []KustomizePatch `json:"patches,omitempty"`
	// Images replace image names, tags or digests in the rendered workloads.
	// +optional
	// +listType=atomic
	Images []KustomizeImage `json:"images,omitempty"`
}

// KustomizePatch is a kustomize patch: a strategic-merge patch or a JSON 6902
// patch (a YAML list of operations), inline.
type KustomizePatch struct {
	// Patch is the patch document.
	// +required
	// +kubebuilder:validation:MinLength=1
	Patch string `json:"patch"`
	// Target selects the objects to patch; a strategic-merge patch without
	// one patches the object it names.
	// +optional
	Target *ObjectSelector `json:"target,omitempty"`
}

// KustomizeImage overrides one image.
type KustomizeImage struct {
	// Name of the image to replace, as the chart renders it (without tag).
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// NewName replaces the name.
	// +optional
	NewName string `json:"newName,omitempty"`
	// NewTag replaces the tag.
	// +optional
	NewTag string `json:"newTag,omitempty"`
	// Digest replaces the tag with a digest.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// Chart template kinds (Flux helm-controller v1.7's spec.chart.kind).
const (
	// ChartKindHelmChart reads spec.chart.spec.chart from spec.chart.spec.sourceRef.
	ChartKindHelmChart = "HelmChart"
	// ChartKindOCIRepository pulls the chart at spec.chart.spec.url from an
	// OCI registry; no Flux object is involved.
	ChartKindOCIRepository = "OCIRepository"
)

// HelmChartTemplate describes the chart to install: a chart in a Flux source
// (kind HelmChart, the default), or a chart in an OCI registry the operator
// pulls itself (kind OCIRepository, Flux v1.7's inline OCI source), which
// needs no Flux installed.
// +kubebuilder:validation:XValidation:rule="has(self.kind) && self.kind == 'OCIRepository' ? has(self.spec.url) : (has(self.spec.chart) && has(self.spec.sourceRef))",message="spec.chart.spec.url is required when spec.chart.kind is OCIRepository; spec.chart.spec.chart and spec.chart.spec.sourceRef otherwise"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || (!has(self.spec.chart) && !has(self.spec.sourceRef) && !has(self.spec.valuesFiles) && !has(self.spec.ignoreMissingValuesFiles))",message="spec.chart.spec.chart, sourceRef, valuesFiles and ignoreMissingValuesFiles cannot be set when spec.chart.kind is OCIRepository"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || ((!has(self.spec.version) || self.spec.version == '*') && (!has(self.spec.reconcileStrategy) || self.spec.reconcileStrategy == 'ChartVersion'))",message="spec.chart.spec.version and reconcileStrategy cannot be set when spec.chart.kind is OCIRepository: the version is spec.chart.spec.ref"
// +kubebuilder:validation:XValidation:rule="(has(self.kind) && self.kind == 'OCIRepository') || (!has(self.spec.url) && !has(self.spec.ref) && !has(self.spec.layerSelector) && !has(self.spec.secretRef) && !has(self.spec.certSecretRef) && !has(self.spec.timeout) && !has(self.spec.insecure) && !has(self.spec.suspend) && !has(self.spec.ignore))",message="spec.chart.spec.url, ref, layerSelector, secretRef, certSecretRef, timeout, insecure, suspend and ignore need spec.chart.kind OCIRepository"
type HelmChartTemplate struct {
	// Kind of the chart's source: HelmChart (default), a chart in the
	// spec.sourceRef source; or OCIRepository, a chart at spec.url in an
	// OCI registry.
	// +optional
	// +kubebuilder:validation:Enum=HelmChart;OCIRepository
	Kind string `json:"kind,omitempty"`
	// Metadata is Flux's labels and annotations for the HelmChart object
	// helm-controller creates. kraan-operator creates no HelmChart (it reads
	// the chart straight from the source), so there is nothing to put them
	// on; they are accepted so that Flux manifests apply unchanged.
	// +optional
	Metadata *CommonMetadata `json:"metadata,omitempty"`
	// Spec of the chart.
	// +required
	Spec HelmChartTemplateSpec `json:"spec"`
}

// IsOCI says whether the chart is pulled from spec.chart.spec.url.
func (t *HelmChartTemplate) IsOCI() bool {
	return t != nil && t.Kind == ChartKindOCIRepository
}

// Chart reconcile strategies.
const (
	// ReconcileStrategyChartVersion upgrades when the chart's version changes.
	ReconcileStrategyChartVersion = "ChartVersion"
	// ReconcileStrategyRevision also upgrades when the source's artifact
	// revision changes under the same chart version.
	ReconcileStrategyRevision = "Revision"
)

// HelmChartTemplateSpec names a chart in a source, or in an OCI registry.
// +kubebuilder:validation:XValidation:rule="!has(self.verify)",message="spec.chart.spec.verify is not supported (UnsupportedField): the chart would be installed without verifying its signature; keep this release with Flux's helm-controller"
// +kubebuilder:validation:XValidation:rule="!has(self.serviceAccountName)",message="spec.chart.spec.serviceAccountName is not supported (UnsupportedField): registry credentials come from spec.chart.spec.secretRef, not from a ServiceAccount's image pull secrets"
// +kubebuilder:validation:XValidation:rule="!has(self.proxySecretRef)",message="spec.chart.spec.proxySecretRef is not supported (UnsupportedField): the operator reaches registries through its own proxy settings (HTTPS_PROXY), not per release"
// +kubebuilder:validation:XValidation:rule="!has(self.provider) || self.provider == 'generic'",message="spec.chart.spec.provider aws, azure and gcp are not supported (UnsupportedField): a cloud provider's workload identity is not implemented; give the registry's credentials in spec.chart.spec.secretRef"
type HelmChartTemplateSpec struct {
	// Chart is the chart's name in a HelmRepository, or its path in a
	// GitRepository, OCIRepository or Bucket artifact.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Chart string `json:"chart,omitempty"`

	// Version is a semver range of the chart in a HelmRepository; ignored for
	// charts read from an artifact path.
	// +optional
	// +kubebuilder:default="*"
	Version string `json:"version,omitempty"`

	// SourceRef is the source that holds the chart (kind HelmChart).
	// +optional
	SourceRef *CrossNamespaceObjectReference `json:"sourceRef,omitempty"`

	// ValuesFiles are files of the chart (or, for a chart in an artifact,
	// paths in the artifact) merged in order. As in Flux they replace the
	// chart's values.yaml: list values.yaml first to keep its defaults.
	// +optional
	// +listType=atomic
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips valuesFiles that do not exist instead
	// of failing.
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`

	// Interval at which the chart source is checked for a new chart; defaults
	// to spec.interval. The release is checked at the shorter of the two.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Interval *metav1.Duration `json:"interval,omitempty"`

	// ReconcileStrategy says what makes a new chart for a chart in a
	// GitRepository or Bucket: ChartVersion (a new version in Chart.yaml) or
	// Revision (any new artifact revision). Charts from a HelmRepository are
	// identified by their version only.
	// +optional
	// +kubebuilder:default=ChartVersion
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// Verify is Flux's chart signature verification. It is refused at
	// admission: installing an unverified chart the user asked to verify
	// would defeat its purpose.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Verify *apiextensionsv1.JSON `json:"verify,omitempty"`

	// URL of the chart in an OCI registry (kind OCIRepository):
	// oci://<registry>/<path>/<chart>.
	// +optional
	// +kubebuilder:validation:Pattern="^oci://.*$"
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`

	// Ref selects the chart's version in the registry (kind OCIRepository):
	// digest first, then semver, then tag; the tag latest when empty.
	// +optional
	Ref *OCIRepositoryRef `json:"ref,omitempty"`

	// LayerSelector picks the chart's layer (kind OCIRepository). A chart is
	// the layer of Helm's chart media type, which is what is read; another
	// media type is refused by the operator with a condition naming it.
	// +optional
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`

	// Provider of the registry's credentials (kind OCIRepository): generic,
	// from secretRef. Cloud workload identity (aws, azure, gcp) is refused.
	// +optional
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	Provider string `json:"provider,omitempty"`

	// SecretRef is a kubernetes.io/dockerconfigjson Secret of the
	// HelmRelease's namespace with the registry's credentials (kind
	// OCIRepository).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// ServiceAccountName is Flux's image pull secrets of a ServiceAccount;
	// refused at admission (use secretRef).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef is a Secret of the HelmRelease's namespace with the
	// registry's TLS material: ca.crt, and tls.crt with tls.key for client
	// authentication (kind OCIRepository).
	// +optional
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef is Flux's per-source proxy; refused at admission.
	// +optional
	ProxySecretRef *LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Timeout of each registry operation (kind OCIRepository); the
	// operator's chart fetch timeout when empty.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m))+$`
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Ignore is Flux's filter of an OCI artifact's files. A chart is read
	// from its Helm chart layer whole, as helm-controller reads it, so it
	// changes nothing.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Insecure allows plain HTTP to the registry (kind OCIRepository).
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Suspend stops looking for a new chart in the registry (kind
	// OCIRepository): the chart pulled last keeps being used.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// OCIRepositoryRef selects a chart version in an OCI registry.
// +kubebuilder:validation:XValidation:rule="!has(self.semverFilter)",message="spec.chart.spec.ref.semverFilter is not supported (UnsupportedField): name the versions with ref.semver"
type OCIRepositoryRef struct {
	// Digest of the chart's manifest, sha256:<hex>; wins over semver and tag.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Digest string `json:"digest,omitempty"`
	// SemVer is a version range; the newest matching tag is pulled. Wins
	// over tag.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SemVer string `json:"semver,omitempty"`
	// SemverFilter is Flux's regular expression over tags; refused.
	// +optional
	SemverFilter string `json:"semverFilter,omitempty"`
	// Tag to pull.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Tag string `json:"tag,omitempty"`
}

// OCILayerSelector picks the layer of an OCI artifact.
type OCILayerSelector struct {
	// MediaType of the layer; a chart's is Helm's chart content type.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	MediaType string `json:"mediaType,omitempty"`
	// Operation on the layer: extract or copy. A chart archive is read
	// either way.
	// +optional
	// +kubebuilder:validation:Enum=extract;copy
	Operation string `json:"operation,omitempty"`
}

// CrossNamespaceObjectReference points at a chart source.
type CrossNamespaceObjectReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the source.
	// +required
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;OCIRepository;Bucket
	Kind string `json:"kind"`
	// Name of the source.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the source; defaults to the HelmRelease's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// CrossNamespaceSourceReference points at an artifact that is a chart.
type CrossNamespaceSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the source: an OCIRepository whose artifact is a chart, a
	// source-controller HelmChart (its artifact is the packaged chart), or
	// an ExternalArtifact another controller produces (its CRD comes with
	// source-controller v1.7+).
	// +required
	// +kubebuilder:validation:Enum=OCIRepository;HelmChart;ExternalArtifact
	Kind string `json:"kind"`
	// Name of the source.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the source; defaults to the HelmRelease's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// DependencyReference names another HelmRelease.
type DependencyReference struct {
	// Name of the HelmRelease.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the HelmRelease; defaults to this one's.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// ReadyExpr is a CEL expression, as Flux's: when set, it replaces the
	// built-in check (Ready=True at the dependency's generation). It sees
	// the dependency as `dep` and this HelmRelease as `self`, and must give
	// a bool: `dep.status.observedGeneration == dep.metadata.generation`.
	// Its length and the cost of one evaluation are bounded.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	ReadyExpr string `json:"readyExpr,omitempty"`
}

// KubeConfigReference locates a kubeconfig, as Flux's meta.KubeConfigReference.
// +kubebuilder:validation:XValidation:rule="!has(self.configMapRef)",message="spec.kubeConfig.configMapRef is not supported (UnsupportedField): a cloud provider's workload identity is not implemented; use spec.kubeConfig.secretRef"
// +kubebuilder:validation:XValidation:rule="has(self.secretRef)",message="spec.kubeConfig must set secretRef"
type KubeConfigReference struct {
	// SecretRef is the Secret, in the HelmRelease's namespace, holding the
	// kubeconfig under key (default "value", then "value.yaml"). The
	// kubeconfig must carry its credentials inline: file references, exec
	// plugins and insecure-skip-tls-verify are refused, so a release cannot
	// make the operator read its own files or run programs.
	// +optional
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`
	// ConfigMapRef is Flux's workload-identity configuration; refused.
	// +optional
	ConfigMapRef *LocalObjectReference `json:"configMapRef,omitempty"`
}

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key of the Secret's data; empty means "value", then "value.yaml".
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ValuesReference is a ConfigMap or Secret key holding values.
type ValuesReference struct {
	// Kind of the object holding the values.
	// +required
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// Name of the object, in the HelmRelease's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// ValuesKey is the data key holding the values.
	// +optional
	// +kubebuilder:default="values.yaml"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[\-._a-zA-Z0-9]+$`
	ValuesKey string `json:"valuesKey,omitempty"`
	// TargetPath puts the key's whole content at this path (`--set` key syntax:
	// a.b, a[0], a\.b) instead of merging it as YAML. As in Flux, a value in
	// quotes is the string between them and a plain true, false, null or
	// integer is typed; unlike Flux, the value is never parsed as `--set`
	// syntax, so commas and `key=value` in it stay part of it.
	// +optional
	// +kubebuilder:validation:MaxLength=250
	TargetPath string `json:"targetPath,omitempty"`
	// Optional makes a missing object or key not an error.
	// +optional
	Optional bool `json:"optional,omitempty"`
	// Literal, with TargetPath, sets the value as a string even where it
	// reads as true, false, null or a number (helm --set-literal).
	// +optional
	Literal bool `json:"literal,omitempty"`
}

// Drift detection modes.
const (
	// DriftDetectionDisabled does not compare the cluster with the release.
	DriftDetectionDisabled = "disabled"
	// DriftDetectionWarn reports drift in a condition and an event.
	DriftDetectionWarn = "warn"
	// DriftDetectionEnabled reports and corrects drift.
	DriftDetectionEnabled = "enabled"
)

// DriftDetection configures how the release is compared with the cluster.
type DriftDetection struct {
	// Mode of drift detection.
	// +optional
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum=disabled;warn;enabled
	Mode string `json:"mode,omitempty"`
	// Ignore rules: JSON pointers not compared, optionally for some objects only.
	// +optional
	// +listType=atomic
	Ignore []IgnoreRule `json:"ignore,omitempty"`
}

// IgnoreRule excludes paths from drift detection.
type IgnoreRule struct {
	// Paths are JSON pointers (RFC 6901), e.g. `/spec/replicas`.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Paths []string `json:"paths"`
	// Target limits the rule to matching objects; empty matches all.
	// +optional
	Target *ObjectSelector `json:"target,omitempty"`
}

// ObjectSelector selects rendered objects by kind and name.
type ObjectSelector struct {
	// Group of the objects.
	// +optional
	Group string `json:"group,omitempty"`
	// Version of the objects.
	// +optional
	Version string `json:"version,omitempty"`
	// Kind of the objects.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the object.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// LabelSelector is a label selector expression, e.g. `app=web,tier!=db`.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// AnnotationSelector is a label selector expression over annotations.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// CRD policies for install and upgrade.
const (
	// CRDsSkip leaves the chart's CRDs alone.
	CRDsSkip = "Skip"
	// CRDsCreate creates the chart's CRDs that do not exist.
	CRDsCreate = "Create"
	// CRDsCreateReplace creates and replaces the chart's CRDs.
	CRDsCreateReplace = "CreateReplace"
)

// Remediation strategies.
const (
	// RollbackRemediation rolls a failed upgrade back to the last deployed revision.
	RollbackRemediation = "rollback"
	// UninstallRemediation uninstalls a failed release.
	UninstallRemediation = "uninstall"
)

// ActionOptions are options shared by install, upgrade and rollback.
type ActionOptions struct {
	// Timeout of the action; defaults to spec.timeout, then 5m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DisableWait does not wait for resources to be ready.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`
	// DisableWaitForJobs does not wait for Jobs to complete.
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`
	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`
}

// Install configures `helm install`.
type Install struct {
	ActionOptions `json:",inline"`
	// Remediation of a failed install; its strategy is always uninstall.
	// +optional
	Remediation *InstallRemediation `json:"remediation,omitempty"`
	// DisableOpenAPIValidation skips validating rendered objects against the API schema.
	// +optional
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`
	// Replace reuses the name of a deleted release that remains in history.
	// +optional
	Replace bool `json:"replace,omitempty"`
	// CRDs policy for the chart's crds/ directory; defaults to Create, or to
	// Skip when skipCRDs is set.
	// +optional
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	CRDs string `json:"crds,omitempty"`
	// SkipCRDs is Flux's older spelling of crds: Skip; crds wins when both are set.
	// +optional
	SkipCRDs bool `json:"skipCRDs,omitempty"`
	// CreateNamespace creates the target namespace if missing.
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`
	// Strategy on a failed install: remediate (uninstall, per remediation)
	// or retry after an interval without remediating.
	// +optional
	Strategy *ActionStrategy `json:"strategy,omitempty"`
	// DisableTakeOwnership refuses to adopt objects that exist and belong to
	// no Helm release; by default, as in Flux, they are adopted.
	// +optional
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`
	// DisableSchemaValidation skips validating values against the chart's
	// values.schema.json.
	// +optional
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`
	// ServerSideApply says whether the install applies its objects
	// server-side. Unset is true, or false when the operator runs with the
	// UseHelm3Defaults feature gate. Later upgrades and rollbacks keep the
	// method unless their own serverSideApply says otherwise.
	// +optional
	ServerSideApply *bool `json:"serverSideApply,omitempty"`
}

// Action strategies.
const (
	// StrategyRemediateOnFailure remediates a failed action per its remediation.
	StrategyRemediateOnFailure = "RemediateOnFailure"
	// StrategyRetryOnFailure retries a failed action after retryInterval,
	// without remediation and without limit.
	StrategyRetryOnFailure = "RetryOnFailure"
)

// ActionStrategy is what happens after an install or upgrade fails.
// +kubebuilder:validation:XValidation:rule="!has(self.retryInterval) || self.name != 'RemediateOnFailure'",message=".retryInterval cannot be set when .name is 'RemediateOnFailure'"
type ActionStrategy struct {
	// Name of the strategy.
	// +required
	// +kubebuilder:validation:Enum=RemediateOnFailure;RetryOnFailure
	Name string `json:"name"`
	// RetryInterval between attempts of RetryOnFailure; defaults to 5m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
}

// InstallRemediation configures what happens after a failed install.
type InstallRemediation struct {
	// Retries before giving up; -1 retries forever.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	Retries int `json:"retries,omitempty"`
	// IgnoreTestFailures does not count a failed test as a failed install.
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`
	// RemediateLastFailure uninstalls after the last retry too.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`
}

// Upgrade configures `helm upgrade`.
type Upgrade struct {
	ActionOptions `json:",inline"`
	// Remediation of a failed upgrade.
	// +optional
	Remediation *UpgradeRemediation `json:"remediation,omitempty"`
	// DisableOpenAPIValidation skips validating rendered objects against the API schema.
	// +optional
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`
	// Force replaces objects that cannot be patched.
	// +optional
	Force bool `json:"force,omitempty"`
	// PreserveValues reuses the last release's values.
	// +optional
	PreserveValues bool `json:"preserveValues,omitempty"`
	// CleanupOnFail deletes objects created by a failed upgrade.
	// +optional
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`
	// CRDs policy for the chart's crds/ directory.
	// +optional
	// +kubebuilder:default=Skip
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	CRDs string `json:"crds,omitempty"`
	// Strategy on a failed upgrade: remediate (rollback or uninstall, per
	// remediation) or retry after an interval without remediating.
	// +optional
	Strategy *ActionStrategy `json:"strategy,omitempty"`
	// DisableTakeOwnership refuses to adopt objects that exist and belong to
	// no Helm release; by default, as in Flux, they are adopted.
	// +optional
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`
	// DisableSchemaValidation skips validating values against the chart's
	// values.schema.json.
	// +optional
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`
	// ServerSideApply says whether the upgrade applies server-side:
	// enabled, disabled, or auto (the default, whatever the switch), which
	// keeps the apply method of the release's last revision, so a release
	// installed client-side stays client-side until this says otherwise.
	// +optional
	// +kubebuilder:validation:Enum=enabled;disabled;auto
	ServerSideApply ServerSideApplyMode `json:"serverSideApply,omitempty"`
	// ChartNameChangeStrategy is what an upgrade to a chart of another name
	// does: Reinstall (the default: uninstall, then install the new chart)
	// or InPlaceUpdate (upgrade the release to the new chart).
	// +optional
	// +kubebuilder:validation:Enum=InPlaceUpdate;Reinstall
	ChartNameChangeStrategy ChartNameChangeStrategy `json:"chartNameChangeStrategy,omitempty"`
}

// UpgradeRemediation configures what happens after a failed upgrade.
type UpgradeRemediation struct {
	// Retries before giving up; -1 retries forever.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	Retries int `json:"retries,omitempty"`
	// IgnoreTestFailures does not count a failed test as a failed upgrade.
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`
	// RemediateLastFailure remediates after the last retry too; defaults to
	// true when retries > 0.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`
	// Strategy of remediation.
	// +optional
	// +kubebuilder:default=rollback
	// +kubebuilder:validation:Enum=rollback;uninstall
	Strategy string `json:"strategy,omitempty"`
}

// Test configures `helm test`.
type Test struct {
	// Enable runs the chart's tests after every install and upgrade.
	// +optional
	Enable bool `json:"enable,omitempty"`
	// Timeout of the tests.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// IgnoreFailures keeps the release Ready when a test fails.
	// +optional
	IgnoreFailures bool `json:"ignoreFailures,omitempty"`
	// Filters select the tests to run: named tests with exclude false are
	// the only ones run; named tests with exclude true are skipped.
	// +optional
	// +listType=atomic
	Filters []TestFilter `json:"filters,omitempty"`
}

// TestFilter names a test hook to run or to skip.
type TestFilter struct {
	// Name of the test hook.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Exclude skips the test instead.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// Rollback configures `helm rollback`.
type Rollback struct {
	ActionOptions `json:",inline"`
	// Recreate restarts pods.
	// +optional
	Recreate bool `json:"recreate,omitempty"`
	// Force replaces objects that cannot be patched.
	// +optional
	Force bool `json:"force,omitempty"`
	// CleanupOnFail deletes objects created by a failed rollback.
	// +optional
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`
	// ServerSideApply says whether the rollback applies server-side:
	// enabled, disabled, or auto (the default, whatever the switch), which
	// keeps the apply method of the release's last revision.
	// +optional
	// +kubebuilder:validation:Enum=enabled;disabled;auto
	ServerSideApply ServerSideApplyMode `json:"serverSideApply,omitempty"`
}

// Uninstall configures `helm uninstall`.
type Uninstall struct {
	// Timeout of the uninstall.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DisableHooks skips the chart's uninstall hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`
	// KeepHistory keeps the release records.
	// +optional
	KeepHistory bool `json:"keepHistory,omitempty"`
	// DisableWait does not wait for objects to be deleted.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`
	// DeletionPropagation policy for the release's objects.
	// +optional
	// +kubebuilder:default=background
	// +kubebuilder:validation:Enum=background;foreground;orphan
	DeletionPropagation string `json:"deletionPropagation,omitempty"`
}

// TestHookStatus is the last run of one test hook.
type TestHookStatus struct {
	// LastStarted is when the hook last started.
	// +optional
	LastStarted metav1.Time `json:"lastStarted,omitempty"`
	// LastCompleted is when the hook last completed.
	// +optional
	LastCompleted metav1.Time `json:"lastCompleted,omitempty"`
	// Phase of the hook: Succeeded, Failed, Running.
	// +optional
	Phase string `json:"phase,omitempty"`
}

// HelmReleaseStatus is the observed state of a release.
type HelmReleaseStatus struct {
	// ObservedGeneration is the generation last fully handled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions, one per type: Ready, Reconciling, Stalled, Released,
	// TestSuccess, Remediated, Drifted.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// StorageNamespace where the release records are.
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// History of releases, newest first.
	// +optional
	// +listType=atomic
	History []Snapshot `json:"history,omitempty"`

	// Inventory lists the objects the newest revision of the release
	// applied (its manifest, without hooks, and the chart's CRDs), as
	// Flux's status.inventory; empty after the release was uninstalled.
	// +optional
	Inventory *ResourceInventory `json:"inventory,omitempty"`

	// Failures since the last success or spec change.
	// +optional
	Failures int64 `json:"failures,omitempty"`
	// InstallFailures since the last success or spec change.
	// +optional
	InstallFailures int64 `json:"installFailures,omitempty"`
	// UpgradeFailures since the last success or spec change.
	// +optional
	UpgradeFailures int64 `json:"upgradeFailures,omitempty"`

	// LastAttemptedGeneration is the generation last attempted; the failure
	// counters start again when it changes.
	// +optional
	LastAttemptedGeneration int64 `json:"lastAttemptedGeneration,omitempty"`
	// LastAttemptedRevision is the chart version last attempted.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// LastAttemptedValuesChecksum is the digest of the values last attempted.
	// +optional
	LastAttemptedValuesChecksum string `json:"lastAttemptedValuesChecksum,omitempty"`
	// LastAttemptedRevisionDigest is the digest of the chart last attempted.
	// +optional
	LastAttemptedRevisionDigest string `json:"lastAttemptedRevisionDigest,omitempty"`
	// LastAttemptedSourceRevision is what the chart of the last attempt was
	// resolved from: the sha256 digest of a HelmRepository's index.yaml, the
	// OCI manifest digest of a chart in an OCI HelmRepository, or the
	// artifact revision of a GitRepository, Bucket, OCIRepository or
	// HelmChart. It tells which index a version range was resolved against.
	// +optional
	LastAttemptedSourceRevision string `json:"lastAttemptedSourceRevision,omitempty"`
	// LastAttemptedConfigDigest is the digest of the values last attempted
	// (Flux's name for it).
	// +optional
	LastAttemptedConfigDigest string `json:"lastAttemptedConfigDigest,omitempty"`
	// LastAttemptedReleaseAction is the last install or upgrade attempted.
	// +optional
	// +kubebuilder:validation:Enum=install;upgrade
	LastAttemptedReleaseAction string `json:"lastAttemptedReleaseAction,omitempty"`
	// LastAttemptedReleaseActionDuration is how long that install or
	// upgrade took, its wait included.
	// +optional
	// +kubebuilder:validation:Type=string
	LastAttemptedReleaseActionDuration *metav1.Duration `json:"lastAttemptedReleaseActionDuration,omitempty"`
	// ObservedPostRenderersDigest is the digest of spec.postRenderers and
	// spec.commonMetadata of the last release made.
	// +optional
	ObservedPostRenderersDigest string `json:"observedPostRenderersDigest,omitempty"`
	// LastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// LastHandledForceAt is the last reconcile.fluxcd.io/forceAt handled.
	// +optional
	LastHandledForceAt string `json:"lastHandledForceAt,omitempty"`
	// LastHandledResetAt is the last reconcile.fluxcd.io/resetAt handled.
	// +optional
	LastHandledResetAt string `json:"lastHandledResetAt,omitempty"`
}

// ReleaseAction is a Helm action that makes a revision, Flux's values.
type ReleaseAction string

// Release actions.
const (
	ReleaseActionInstall              ReleaseAction = "install"
	ReleaseActionUpgrade              ReleaseAction = "upgrade"
	ReleaseActionRollback             ReleaseAction = "rollback"
	ReleaseActionUninstall            ReleaseAction = "uninstall"
	ReleaseActionUninstallRemediation ReleaseAction = "uninstall-remediation"
)

// ResourceInventory lists objects a release applied (Flux's).
type ResourceInventory struct {
	// Entries, one per object.
	// +required
	// +listType=atomic
	Entries []ResourceRef `json:"entries"`
}

// ResourceRef identifies one object of an inventory.
type ResourceRef struct {
	// ID is "<namespace>_<name>_<group>_<kind>", the namespace empty for
	// cluster-scoped objects and the group empty for the core group.
	// +required
	ID string `json:"id"`
	// Version is the API version of the object's kind, e.g. "v1".
	// +required
	Version string `json:"v"`
}

// Snapshot is one release revision.
type Snapshot struct {
	// Name of the release.
	// +required
	Name string `json:"name"`
	// Namespace of the release.
	// +required
	Namespace string `json:"namespace"`
	// Version (revision) of the release.
	// +required
	Version int `json:"version"`
	// Status of the release as Helm reports it.
	// +required
	Status string `json:"status"`
	// Action is the Helm action that made this revision what it is:
	// install, upgrade, rollback, or uninstall-remediation (an uninstall
	// after a failed install, with keepHistory). Empty for a revision the
	// operator found rather than made.
	// +optional
	// +kubebuilder:validation:Enum=install;upgrade;rollback;uninstall;uninstall-remediation
	Action ReleaseAction `json:"action,omitempty"`
	// ChartName of the release.
	// +required
	ChartName string `json:"chartName"`
	// ChartVersion of the release.
	// +required
	ChartVersion string `json:"chartVersion"`
	// AppVersion of the chart.
	// +optional
	AppVersion string `json:"appVersion,omitempty"`
	// Digest of the release manifest and chart.
	// +optional
	Digest string `json:"digest,omitempty"`
	// ConfigDigest is the digest of the values.
	// +optional
	ConfigDigest string `json:"configDigest,omitempty"`
	// TestResult of the last test run: Succeeded, Failed or empty.
	// +optional
	TestResult string `json:"testResult,omitempty"`
	// TestHooks are the test hooks of the revision that ran, by name.
	// +optional
	TestHooks map[string]TestHookStatus `json:"testHooks,omitempty"`
	// FirstDeployed is when the release was first deployed.
	// +optional
	FirstDeployed metav1.Time `json:"firstDeployed,omitempty"`
	// LastDeployed is when this revision was deployed.
	// +optional
	LastDeployed metav1.Time `json:"lastDeployed,omitempty"`
}

// HelmRelease is a Helm release installed by the operator's embedded Helm SDK,
// with Flux helm.toolkit.fluxcd.io/v2 field names.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName={khr},categories={kraan}
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart.spec.chart`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.lastAttemptedRevision`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HelmRelease struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec HelmReleaseSpec `json:"spec"`
	// +optional
	Status HelmReleaseStatus `json:"status,omitempty"`
}

// GetConditions returns the release's conditions.
func (in *HelmRelease) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the release's conditions.
func (in *HelmRelease) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// HelmReleaseList is a list of HelmReleases.
type HelmReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRelease `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &HelmRelease{}, &HelmReleaseList{})
}
