package helm

import (
	"sync"

	"helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/validation"
	"sigs.k8s.io/yaml"
)

// sharedValidators serves Helm's Build the same validator for every action
// of a cluster until its APIs change.
//
// Helm asks kubectl's factory for a new validator at every Build. Before
// validating on the client, that validator asks whether the API server
// validates fields itself (the fieldValidation parameter, GA since 1.27) by
// parsing the OpenAPI v3 document of each kind's group version: a megabyte
// of JSON for apps/v1, parsed again by every action. Measured on 4 layers ×
// 10 releases, it was 58 % of the operator's CPU while installing. The
// validator caches its answers per kind, so one kept validator parses each
// document once.
type sharedValidators struct {
	kube.Factory
	apis *servedAPIs
	// clientsets serves KubernetesClientSet, built from config.
	clientsets *clientsets
	config     *rest.Config
	// user is the impersonated user: a validator or clientset built as one
	// user is never served to another.
	user string
}

// KubernetesClientSet implements kube.Factory with the cluster's clientset
// of the user (see clientsets).
func (f *sharedValidators) KubernetesClientSet() (*kubernetes.Clientset, error) {
	return f.clientsets.get(f.user, f.config)
}

var _ kube.Factory = &sharedValidators{}

// Validator implements kube.Factory.
func (f *sharedValidators) Validator(directive string) (validation.Schema, error) {
	if directive == metav1.FieldValidationIgnore {
		return f.Factory.Validator(directive) // validates nothing, costs nothing
	}
	return f.apis.validator(f.user+"\x00"+directive, func() (validation.Schema, error) {
		v, err := f.build(directive)
		if err != nil {
			return nil, err
		}
		return &firstOfAKindAlone{Schema: v, seen: map[string]bool{}}, nil
	})
}

// build is kubectl's validator (its factory's Validator), except that it
// keeps the answer to "does the API server validate this kind's fields
// itself?" per kind, not the OpenAPI documents the answer was read from:
// kubectl's keeps every group's document — 2.5 MiB for the core group —
// as long as the validator, which here is as long as the cluster's APIs
// stay the same.
func (f *sharedValidators) build(directive string) (validation.Schema, error) {
	full, ok := f.Factory.(cmdutil.Factory)
	if !ok {
		return f.Factory.Validator(directive)
	}
	dyn, err := full.DynamicClient()
	if err != nil {
		return nil, err
	}
	disc, err := full.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	param := resource.QueryParamFieldValidation
	primary := &keptAnswers{answers: map[schema.GroupVersionKind]error{}, ask: func(gvk schema.GroupVersionKind) error {
		// A verifier of its own per question: its documents go with it.
		return resource.NewQueryParamVerifierV3(dyn, cached.NewClient(disc.OpenAPIV3()), param).HasSupport(gvk)
	}}
	secondary := resource.NewQueryParamVerifier(dyn, disc, param)
	clientSide := validation.ConjunctiveSchema{validation.NewSchemaValidation(full), validation.NoDoubleKeySchema{}}
	return validation.NewParamVerifyingSchema(clientSide, resource.NewFallbackQueryParamVerifier(primary, secondary), directive), nil
}

// keptAnswers keeps a verifier's answers per kind: supported, or not. An
// error of another sort (the API server unreachable) is asked again.
type keptAnswers struct {
	ask     func(schema.GroupVersionKind) error
	mu      sync.Mutex
	answers map[schema.GroupVersionKind]error
}

// HasSupport implements resource.Verifier.
func (k *keptAnswers) HasSupport(gvk schema.GroupVersionKind) error {
	k.mu.Lock()
	answer, ok := k.answers[gvk]
	k.mu.Unlock()
	if ok {
		return answer
	}
	answer = k.ask(gvk)
	if answer == nil || resource.IsParamUnsupportedError(answer) {
		k.mu.Lock()
		k.answers[gvk] = answer
		k.mu.Unlock()
	}
	return answer
}

// firstOfAKindAlone validates the first object of each kind alone: the
// validator caches its answer for a kind only once it has one, so the
// releases of a wave, all rendering Deployments, would each parse the same
// OpenAPI document at once.
type firstOfAKindAlone struct {
	validation.Schema
	first sync.Mutex // held while a kind is validated the first time
	mu    sync.Mutex
	seen  map[string]bool
}

// ValidateBytes implements validation.Schema.
func (s *firstOfAKindAlone) ValidateBytes(data []byte) error {
	var kind metav1.TypeMeta
	if err := yaml.Unmarshal(data, &kind); err != nil {
		return s.Schema.ValidateBytes(data) // says what is wrong with it
	}
	key := kind.APIVersion + "/" + kind.Kind
	s.mu.Lock()
	seen := s.seen[key]
	s.mu.Unlock()
	if seen {
		return s.Schema.ValidateBytes(data)
	}
	s.first.Lock()
	defer s.first.Unlock()
	err := s.Schema.ValidateBytes(data)
	s.mu.Lock()
	s.seen[key] = true
	s.mu.Unlock()
	return err
}
