package helm

import (
	"bytes"
	"log/slog"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/validation"
)

// TestSharedValidators: every action's Build validates with the same
// validator, whose per-kind answers (does the API server validate fields
// itself?) are kept, until the served APIs change; a validator is never
// shared between impersonated users; Build works with it.
func TestSharedValidators(t *testing.T) {
	g := NewWithT(t)
	_, engine := startEngine(t)
	validator := func(target Target) validation.Schema {
		cfg, err := engine.configFor(target, slog.DiscardHandler, nil)
		g.Expect(err).NotTo(HaveOccurred())
		v, err := cfg.KubeClient.(*owningClient).Factory.Validator(metav1.FieldValidationStrict)
		g.Expect(err).NotTo(HaveOccurred())
		return v
	}
	target := Target{Namespace: "default", StorageNamespace: "default", ReleaseName: "a"}
	first := validator(target)
	g.Expect(validator(target)).To(BeIdenticalTo(first), "the next action keeps the validator")
	g.Expect(validator(Target{Namespace: "default", StorageNamespace: "default", ReleaseName: "b"})).To(
		BeIdenticalTo(first), "as does another release's")
	g.Expect(validator(Target{Namespace: "default", Impersonate: "system:serviceaccount:default:x"})).NotTo(
		BeIdenticalTo(first), "another user gets their own")
	g.Expect(validator(Target{Namespace: "default", FreshClients: true})).NotTo(
		BeIdenticalTo(first), "persistentClient: false gets a fresh one")

	engine.local.apis.invalidate()
	g.Expect(validator(target)).NotTo(BeIdenticalTo(first), "a change of the served APIs drops it")

	cfg, err := engine.configFor(target, slog.DiscardHandler, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cfg.KubeClient.Build(bytes.NewBufferString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n"), true)
	g.Expect(err).NotTo(HaveOccurred())
}
