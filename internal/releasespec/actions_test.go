package releasespec

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// TestActionsOf_readsEveryOption: each option of the spec reaches the
// engine's options, and an empty spec is the engine's zero value (Flux's
// defaults) but for the install CRDs policy, which is resolved.
func TestActionsOf_readsEveryOption(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ActionsOf(&kraanv1.HelmReleaseSpec{})).To(Equal(helm.Actions{Install: helm.InstallOptions{CRDs: kraanv1.CRDsCreate}}))

	minute := &metav1.Duration{Duration: time.Minute}
	wait := kraanv1.ActionOptions{Timeout: minute, DisableWait: true, DisableWaitForJobs: true, DisableHooks: true}
	waitOpts := helm.WaitOptions{Timeout: time.Minute, DisableWait: true, DisableWaitForJobs: true, DisableHooks: true}
	kustomize := &kraanv1.KustomizePostRenderer{Images: []kraanv1.KustomizeImage{{Name: "nginx", NewTag: "1.27"}}}
	spec := &kraanv1.HelmReleaseSpec{
		Timeout:    &metav1.Duration{Duration: 2 * time.Minute},
		MaxHistory: ptr.To(0),
		Install: &kraanv1.Install{ActionOptions: wait, DisableOpenAPIValidation: true, DisableSchemaValidation: true,
			Replace: true, CreateNamespace: true, DisableTakeOwnership: true, SkipCRDs: true},
		Upgrade: &kraanv1.Upgrade{ActionOptions: wait, DisableOpenAPIValidation: true, DisableSchemaValidation: true,
			DisableTakeOwnership: true, Force: true, CleanupOnFail: true, PreserveValues: true, CRDs: kraanv1.CRDsCreateReplace},
		Rollback:           &kraanv1.Rollback{ActionOptions: wait, Force: true, CleanupOnFail: true},
		Uninstall:          &kraanv1.Uninstall{Timeout: minute, DisableHooks: true, DisableWait: true, KeepHistory: true, DeletionPropagation: "foreground"},
		Test:               &kraanv1.Test{Enable: true, Timeout: minute, Filters: []kraanv1.TestFilter{{Name: "slow", Exclude: true}}},
		PostRenderers:      []kraanv1.PostRenderer{{}, {Kustomize: kustomize}},
		CommonMetadata:     &kraanv1.CommonMetadata{Labels: map[string]string{"team": "platform"}},
		PostRenderStrategy: kraanv1.PostRenderStrategySeparate,
	}
	got := ActionsOf(spec)
	g.Expect(got.Policy.TestSelected).NotTo(BeNil())
	g.Expect(got.Policy.TestSelected("slow")).To(BeFalse())
	got.Policy.TestSelected = nil
	g.Expect(got).To(Equal(helm.Actions{
		Timeout:    2 * time.Minute,
		MaxHistory: ptr.To(0),
		Install: helm.InstallOptions{WaitOptions: waitOpts, DisableOpenAPIValidation: true, DisableSchemaValidation: true,
			Replace: true, CreateNamespace: true, DisableTakeOwnership: true, CRDs: kraanv1.CRDsSkip},
		Upgrade: helm.UpgradeOptions{WaitOptions: waitOpts, DisableOpenAPIValidation: true, DisableSchemaValidation: true,
			DisableTakeOwnership: true, Force: true, CleanupOnFail: true, PreserveValues: true, CRDs: kraanv1.CRDsCreateReplace},
		Rollback:  helm.RollbackOptions{WaitOptions: waitOpts, Force: true, CleanupOnFail: true},
		Uninstall: helm.UninstallOptions{Timeout: time.Minute, DisableHooks: true, DisableWait: true, KeepHistory: true, DeletionPropagation: "foreground"},
		Test:      helm.TestOptions{Timeout: time.Minute, Filters: []helm.TestFilter{{Name: "slow", Exclude: true}}},
		Policy:    helm.Policy{TestEnable: true},
		PostRender: helm.PostRender{
			Kustomize:      []*kraanv1.KustomizePostRenderer{nil, kustomize},
			CommonMetadata: spec.CommonMetadata,
			FluxStrategy:   kraanv1.PostRenderStrategySeparate,
		},
	}))
	g.Expect(got.RunTimeout()).To(Equal(2 * time.Minute))
	g.Expect(got.SchemaValidated()).To(BeFalse())
}

// TestActionsOf_installCRDs: Flux's reading of install.crds and the older
// install.skipCRDs.
func TestActionsOf_installCRDs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		install *kraanv1.Install
		want    string
	}{
		{"default", nil, kraanv1.CRDsCreate},
		{"skipCRDs", &kraanv1.Install{SkipCRDs: true}, kraanv1.CRDsSkip},
		{"crds wins over skipCRDs", &kraanv1.Install{SkipCRDs: true, CRDs: kraanv1.CRDsCreate}, kraanv1.CRDsCreate},
		{"CreateReplace", &kraanv1.Install{CRDs: kraanv1.CRDsCreateReplace}, kraanv1.CRDsCreateReplace},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(ActionsOf(&kraanv1.HelmReleaseSpec{Install: tt.install}).Install.CRDs).To(Equal(tt.want))
		})
	}
}

// TestSchemaValidated_isWhatTheEngineIsTold: the values step's shortcut
// answers as the engine's options do, for every way the check is turned off.
func TestSchemaValidated_isWhatTheEngineIsTold(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec kraanv1.HelmReleaseSpec
		want bool
	}{
		{"default", kraanv1.HelmReleaseSpec{}, true},
		{"install and upgrade set, checking", kraanv1.HelmReleaseSpec{Install: &kraanv1.Install{}, Upgrade: &kraanv1.Upgrade{}}, true},
		{"install turns it off", kraanv1.HelmReleaseSpec{Install: &kraanv1.Install{DisableSchemaValidation: true}}, false},
		{"upgrade turns it off", kraanv1.HelmReleaseSpec{Upgrade: &kraanv1.Upgrade{DisableSchemaValidation: true}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(SchemaValidated(&tt.spec)).To(Equal(tt.want))
			g.Expect(ActionsOf(&tt.spec).SchemaValidated()).To(Equal(tt.want))
		})
	}
}

// TestPolicyOf: Flux's remediation defaults and strategies.
func TestPolicyOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(PolicyOf(&kraanv1.HelmReleaseSpec{})).To(Equal(helm.Policy{}))
	spec := &kraanv1.HelmReleaseSpec{
		Install: &kraanv1.Install{Remediation: &kraanv1.InstallRemediation{Retries: 2, RemediateLastFailure: ptr.To(true)},
			Strategy: &kraanv1.ActionStrategy{Name: kraanv1.StrategyRetryOnFailure}},
		Upgrade: &kraanv1.Upgrade{Remediation: &kraanv1.UpgradeRemediation{Retries: 3, Strategy: kraanv1.UninstallRemediation,
			IgnoreTestFailures: ptr.To(true)},
			Strategy: &kraanv1.ActionStrategy{Name: kraanv1.StrategyRetryOnFailure, RetryInterval: &metav1.Duration{Duration: time.Minute}}},
	}
	g.Expect(PolicyOf(spec)).To(Equal(helm.Policy{
		IgnoreTestFailures: true, InstallRetries: 2, InstallRemediateLast: true,
		UpgradeRetries: 3, UpgradeRemediateLast: true, UpgradeStrategyUninstall: true,
		InstallRetryInterval: 5 * time.Minute, UpgradeRetryInterval: time.Minute,
	}))
}

// TestDriftOf: the mode and every selector field of an ignore rule.
func TestDriftOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DriftOf(&kraanv1.HelmReleaseSpec{})).To(Equal(helm.DriftOptions{}))
	sel := &kraanv1.ObjectSelector{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web", Namespace: "ns",
		LabelSelector: "tier=web", AnnotationSelector: "scaled-by=hpa"}
	got := DriftOf(&kraanv1.HelmReleaseSpec{DriftDetection: &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionEnabled,
		Ignore: []kraanv1.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: sel}, {Paths: []string{"/everywhere"}}}}})
	g.Expect(got).To(Equal(helm.DriftOptions{Correct: true, Ignore: []jsondiff.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Selector: &jsondiff.Selector{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web",
			Namespace: "ns", LabelSelector: "tier=web", AnnotationSelector: "scaled-by=hpa"}},
		{Paths: []string{"/everywhere"}},
	}}))
	g.Expect(DriftOf(&kraanv1.HelmReleaseSpec{DriftDetection: &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionWarn}}).Correct).To(BeFalse())
}

func TestPostRenderersDigest(t *testing.T) {
	g := NewWithT(t)
	g.Expect(PostRenderersDigest(&kraanv1.HelmReleaseSpec{})).To(BeEmpty())
	a := PostRenderersDigest(&kraanv1.HelmReleaseSpec{CommonMetadata: &kraanv1.CommonMetadata{Labels: map[string]string{"a": "1"}}})
	b := PostRenderersDigest(&kraanv1.HelmReleaseSpec{CommonMetadata: &kraanv1.CommonMetadata{Labels: map[string]string{"a": "2"}}})
	g.Expect(a).To(HavePrefix("sha256:"))
	g.Expect(a).NotTo(Equal(b))
	// The digest of a spec without postRenderStrategy is the one releases
	// recorded before the field existed: sha256 of {"commonMetadata":{"labels":{"a":"1"}}}.
	g.Expect(a).To(Equal("sha256:" + sha256Hex(`{"commonMetadata":{"labels":{"a":"1"}}}`)))
	separate := PostRenderersDigest(&kraanv1.HelmReleaseSpec{
		CommonMetadata:     &kraanv1.CommonMetadata{Labels: map[string]string{"a": "1"}},
		PostRenderStrategy: kraanv1.PostRenderStrategySeparate,
	})
	g.Expect(separate).NotTo(Equal(a), "a new strategy changes which objects are post-rendered: it must upgrade")
	g.Expect(PostRenderersDigest(&kraanv1.HelmReleaseSpec{PostRenderStrategy: kraanv1.PostRenderStrategySeparate})).
		To(BeEmpty(), "a strategy without post-renderers changes nothing")
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
