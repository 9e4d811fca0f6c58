package v1alpha1

// Conditions of a Habitat. The chart-backed controller writes Operator SDK's
// (Initialized, Deployed, ReleaseFailed, Irreconcilable) and Ready, as for
// every kind of watches.yaml; the Habitat controller writes SecretsReady,
// which counts towards Ready.
const (
	// SecretsReadyCondition is True when the Secrets a Habitat names exist
	// and hold their keys: a release rendered without them is not Ready.
	SecretsReadyCondition = "SecretsReady"
)

// Reasons of SecretsReady, and of its events.
const (
	ReasonSecretsFound     = "SecretsFound"
	ReasonSecretNotFound   = "SecretNotFound"
	ReasonSecretKeyMissing = "SecretKeyMissing"
)

// Kind is the kind of a Habitat, as watches.yaml names it.
const Kind = "Habitat"
