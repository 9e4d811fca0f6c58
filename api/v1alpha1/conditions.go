package v1alpha1

// Condition types shared by every kind of the operator. Ready, Reconciling and
// Stalled follow kstatus so that `kubectl wait --for=condition=Ready` and tools
// such as Flux's health checks understand our objects.
const (
	// ReadyCondition is True when the object's desired state is fully realised.
	ReadyCondition = "Ready"
	// ReconcilingCondition is True while the controller works towards the desired state.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when the controller cannot progress without a change
	// from the user (a configuration error, retries exhausted, a dependency cycle).
	StalledCondition = "Stalled"
)

// AddonsLayer condition types, besides Ready, Reconciling and Stalled.
const (
	// SourceReadyCondition is True when the layer's Flux source has an artifact for
	// its current generation and the operator has fetched and verified it.
	SourceReadyCondition = "SourceReady"
	// PrerequisitesMetCondition is True when k8sVersion and dependsOn are satisfied.
	PrerequisitesMetCondition = "PrerequisitesMet"
	// DeployedCondition is True when every object of the layer's current version is
	// applied and healthy. Kraan users wait on it: `kubectl wait al --for=condition=Deployed`.
	DeployedCondition = "Deployed"
)

// HelmRelease condition types, besides Ready, Reconciling and Stalled. Names match
// Flux helm-controller so dashboards and alerts carry over.
const (
	// ReleasedCondition is True when the last install or upgrade succeeded.
	ReleasedCondition = "Released"
	// TestSuccessCondition reports the result of the last Helm test run.
	TestSuccessCondition = "TestSuccess"
	// RemediatedCondition is True when a failed release was rolled back or uninstalled.
	RemediatedCondition = "Remediated"
	// DriftedCondition is True when the cluster differs from the release manifest.
	DriftedCondition = "Drifted"
)

// Condition types of the chart-backed kinds (Habitat and every kind of
// watches.yaml), besides Ready and Stalled: the Helm operator of Operator
// SDK's four, so that what was written for it reads ours. Its Deployed is
// DeployedCondition: one word, one constant.
const (
	// InitializedCondition is True once the operator has seen the object.
	InitializedCondition = "Initialized"
	// ReleaseFailedCondition is True when the last install, upgrade or
	// uninstall of the object's release failed.
	ReleaseFailedCondition = "ReleaseFailed"
	// IrreconcilableCondition is True when the object's values cannot be
	// read or its release cannot be reconciled without a change.
	IrreconcilableCondition = "Irreconcilable"
)

// Reasons of the chart-backed kinds' conditions; event reasons are the same
// words.
const (
	ReasonReconciling        = "Reconciling"
	ReasonInstallSuccessful  = "InstallSuccessful"
	ReasonUpgradeSuccessful  = "UpgradeSuccessful"
	ReasonNotDeployed        = "NotDeployed"
	ReasonInstallError       = "InstallError"
	ReasonUpgradeError       = "UpgradeError"
	ReasonRollbackError      = "RollbackError"
	ReasonUninstallError     = "UninstallError"
	ReasonReleaseSucceeded   = "ReleaseSucceeded"
	ReasonErrorGettingValues = "ErrorGettingValues"
	ReasonReconcilable       = "Reconcilable"
)

// AddonsLayer condition reasons, equal to the event reasons. ArtifactFailed
// is the HelmRelease's reason too: a source artifact that could not be
// fetched or verified.
const (
	ReasonOnHold            = "OnHold"
	ReasonSourceNotReady    = "SourceNotReady"
	ReasonArtifactFetched   = "ArtifactFetched"
	ReasonPathNotFound      = "PathNotFound"
	ReasonRenderFailed      = "RenderFailed"
	ReasonHandoverFailed    = "HandoverFailed"
	ReasonK8sVersionNotMet  = "K8sVersionNotMet"
	ReasonDependencyCycle   = "DependencyCycle"
	ReasonInvalidDependency = "InvalidDependency"
	ReasonOwnershipConflict = "OwnershipConflict"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonHealthCheckFailed = "HealthCheckFailed"
	ReasonPruneFailed       = "PruneFailed"
	ReasonDeleting          = "Deleting"
	ReasonPrerequisitesMet  = "PrerequisitesMet"
	// ReasonLayerTestFailed: a layer test (an object annotated
	// kraan.io/layer-test, run once the rest of the layer is ready) failed.
	ReasonLayerTestFailed = "LayerTestFailed"
	// ReasonDeployed is the reason of a Deployed layer's conditions: the
	// word of its state (DeployedState) and condition (DeployedCondition).
	ReasonDeployed = DeployedState
)

// Finalizer is put on AddonsLayers and HelmReleases so that deletion uninstalls
// and prunes what they own before the object goes away. Kraan's finalizer name is
// kept so that objects created by Kraan are cleaned up the same way.
const Finalizer = "finalizers.kraan.io"

// ChartFinalizer keeps an object of a chart-backed kind (watches.yaml) until
// its Helm release is uninstalled.
const ChartFinalizer = "kraan.io/uninstall-helm-release"

// HelmRelease condition reasons, equal to the event reasons. Names match Flux
// helm-controller's so alerts written for Flux carry over.
const (
	ReasonInstallSucceeded   = "InstallSucceeded"
	ReasonInstallFailed      = "InstallFailed"
	ReasonUpgradeSucceeded   = "UpgradeSucceeded"
	ReasonUpgradeFailed      = "UpgradeFailed"
	ReasonTestSucceeded      = "TestSucceeded"
	ReasonTestFailed         = "TestFailed"
	ReasonRollbackSucceeded  = "RollbackSucceeded"
	ReasonRollbackFailed     = "RollbackFailed"
	ReasonUninstallSucceeded = "UninstallSucceeded"
	ReasonUninstallFailed    = "UninstallFailed"
	ReasonUnlocked           = "Unlocked"
	ReasonUnlockFailed       = "UnlockFailed"
	ReasonArtifactFailed     = "ArtifactFailed"
	ReasonValuesError        = "ValuesError"
	ReasonDependencyNotReady = "DependencyNotReady"
	ReasonRetriesExceeded    = "RetriesExceeded"
	ReasonRetryOnFailure     = "RetryOnFailure"
	// ReasonRolloutQueued: the release waits in the rollout queue for a
	// slot before its Helm action starts, so that its timeout measures its
	// own rollout (--max-concurrent-rollouts, docs/performance.md).
	ReasonRolloutQueued   = "RolloutQueued"
	ReasonProgressing     = "Progressing"
	ReasonReconcileError  = "ReconcileError"
	ReasonKubeConfigError = "KubeConfigError"
	ReasonAccessDenied    = "AccessDenied"
	// ReasonLayerSealMismatch: the HelmRelease is labelled as an
	// AddonsLayer's, but its spec is not the one the layer applied (edited
	// since): under the multi-tenancy lockdown it waits for the layer to
	// apply it again instead of acting as the platform.
	ReasonLayerSealMismatch = "LayerSealMismatch"
	// ReasonInvalidCELExpression (Flux's): a spec.healthCheckExprs
	// expression does not compile, or cannot judge an object (it costs too
	// much, or gives no bool); the release stalls until the spec changes.
	ReasonInvalidCELExpression = "InvalidCELExpression"
	// ReasonReleaseWrittenOutside (an event): the newest revision of the
	// release was written outside the operator — an admin's helm upgrade or
	// rollback, Flux helm-controller, an edited record — so its signature
	// does not verify. Nothing is replayed from it; the release is brought
	// back to its spec with a revision of the operator's own, or adopted
	// when it deploys exactly that.
	ReasonReleaseWrittenOutside = "ReleaseWrittenOutside"
	// ReasonManagedByFlux: a Flux helm-controller HelmRelease that is not
	// suspended manages the same Helm release; the HelmRelease waits until
	// it is suspended or gone, so that the release has one owner.
	ReasonManagedByFlux = "ManagedByFlux"
	// ReasonSourceKindNotInstalled: the object's source is of a Flux kind
	// whose CRD the cluster does not have (no Flux source-controller); the
	// object waits and goes on when the CRD is installed.
	ReasonSourceKindNotInstalled = "SourceKindNotInstalled"
	ReasonDriftDetected          = "DriftDetected"
	ReasonDriftCorrected         = "DriftCorrected"
	ReasonNoDriftDetected        = "NoDriftDetected"
	ReasonSucceeded              = "Succeeded"

	// ReasonUninstallSkipped: a deleted HelmRelease let go of its release
	// without uninstalling it (its kubeConfig Secret or ServiceAccount is
	// gone, or its namespace is being deleted and uninstalling failed).
	ReasonUninstallSkipped = "UninstallSkipped"

	// ReasonInventoryBuildFailed (an event, Flux's): status.inventory could
	// not be worked out from the release manifest and was left as it was.
	ReasonInventoryBuildFailed = "InventoryBuildFailed"
)
