package helm

import (
	"sync"

	"helm.sh/helm/v3/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// user is the impersonated user: a validator built as one user is
	// never served to another.
	user string
}

var _ kube.Factory = &sharedValidators{}

// Validator implements kube.Factory.
func (f *sharedValidators) Validator(directive string) (validation.Schema, error) {
	if directive == metav1.FieldValidationIgnore {
		return f.Factory.Validator(directive) // validates nothing, costs nothing
	}
	return f.apis.validator(f.user+"\x00"+directive, func() (validation.Schema, error) {
		v, err := f.Factory.Validator(directive)
		if err != nil {
			return nil, err
		}
		return &firstOfAKindAlone{Schema: v, seen: map[string]bool{}}, nil
	})
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
