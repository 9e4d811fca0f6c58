package releasespec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// SchemaValidated says whether a HelmRelease's values are checked against the
// chart's values.schema.json before the next action: what
// ActionsOf(spec).SchemaValidated() says, read from the two fields it needs
// (the values step asks on every reconcile and needs nothing else).
func SchemaValidated(spec *kraanv1.HelmReleaseSpec) bool {
	installOff := spec.Install != nil && spec.Install.DisableSchemaValidation
	upgradeOff := spec.Upgrade != nil && spec.Upgrade.DisableSchemaValidation
	return !installOff && !upgradeOff
}

// ActionsOf is how the Helm engine runs a HelmRelease's actions, read from
// its spec with Flux's defaults: spec.timeout, spec.maxHistory, the options
// of spec.install, upgrade, rollback, uninstall and test, the remediation
// policy, and the post-renderers.
func ActionsOf(spec *kraanv1.HelmReleaseSpec) helm.Actions {
	a := helm.Actions{
		Timeout:    durationOf(spec.Timeout),
		MaxHistory: spec.MaxHistory,
		Policy:     PolicyOf(spec),
		PostRender: helm.PostRender{
			CommonMetadata: spec.CommonMetadata,
			FluxStrategy:   spec.PostRenderStrategy,
		},
	}
	for _, p := range spec.PostRenderers {
		// Kept by index, nil included: errors name spec.postRenderers[i].
		a.PostRender.Kustomize = append(a.PostRender.Kustomize, p.Kustomize)
	}
	if o := spec.Install; o != nil {
		a.Install = helm.InstallOptions{
			WaitOptions:              waitOptionsOf(o.ActionOptions),
			DisableOpenAPIValidation: o.DisableOpenAPIValidation,
			DisableSchemaValidation:  o.DisableSchemaValidation,
			Replace:                  o.Replace,
			CreateNamespace:          o.CreateNamespace,
			DisableTakeOwnership:     o.DisableTakeOwnership,
		}
	}
	a.Install.CRDs = installCRDs(spec.Install)
	if o := spec.Upgrade; o != nil {
		a.Upgrade = helm.UpgradeOptions{
			WaitOptions:              waitOptionsOf(o.ActionOptions),
			DisableOpenAPIValidation: o.DisableOpenAPIValidation,
			DisableSchemaValidation:  o.DisableSchemaValidation,
			DisableTakeOwnership:     o.DisableTakeOwnership,
			Force:                    o.Force,
			CleanupOnFail:            o.CleanupOnFail,
			PreserveValues:           o.PreserveValues,
			CRDs:                     o.CRDs,
		}
	}
	if o := spec.Rollback; o != nil {
		a.Rollback = helm.RollbackOptions{WaitOptions: waitOptionsOf(o.ActionOptions), Force: o.Force, CleanupOnFail: o.CleanupOnFail}
	}
	if o := spec.Uninstall; o != nil {
		a.Uninstall = helm.UninstallOptions{
			Timeout:             durationOf(o.Timeout),
			DisableHooks:        o.DisableHooks,
			DisableWait:         o.DisableWait,
			KeepHistory:         o.KeepHistory,
			DeletionPropagation: o.DeletionPropagation,
		}
	}
	if o := spec.Test; o != nil {
		a.Test = testOptionsOf(o.Filters)
		a.Test.Timeout = durationOf(o.Timeout)
	}
	return a
}

// durationOf is a duration the spec may leave unset (zero).
func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

func waitOptionsOf(o kraanv1.ActionOptions) helm.WaitOptions {
	return helm.WaitOptions{
		Timeout:            durationOf(o.Timeout),
		DisableWait:        o.DisableWait,
		DisableWaitForJobs: o.DisableWaitForJobs,
		DisableHooks:       o.DisableHooks,
	}
}

// installCRDs is spec.install.crds; unset, it is Skip when the older
// spec.install.skipCRDs is set and Create otherwise, as in Flux.
func installCRDs(o *kraanv1.Install) string {
	switch {
	case o == nil:
		return kraanv1.CRDsCreate
	case o.CRDs != "":
		return o.CRDs
	case o.SkipCRDs:
		return kraanv1.CRDsSkip
	default:
		return kraanv1.CRDsCreate
	}
}

// PolicyOf reads the test and remediation policy from spec, with Flux's
// defaults: no retries, upgrade failures remediated by rollback, and the last
// upgrade failure remediated only when retries were asked for.
func PolicyOf(spec *kraanv1.HelmReleaseSpec) helm.Policy {
	p := helm.Policy{}
	if spec.Test != nil {
		p.TestEnable = spec.Test.Enable
		p.IgnoreTestFailures = spec.Test.IgnoreFailures
		if filters := spec.Test.Filters; len(filters) > 0 {
			p.TestSelected = testOptionsOf(filters).Selected
		}
	}
	if spec.Install != nil && spec.Install.Remediation != nil {
		r := spec.Install.Remediation
		p.InstallRetries = r.Retries
		p.InstallRemediateLast = r.RemediateLastFailure != nil && *r.RemediateLastFailure
		p.IgnoreTestFailures = p.IgnoreTestFailures || (r.IgnoreTestFailures != nil && *r.IgnoreTestFailures)
	}
	if spec.Upgrade != nil && spec.Upgrade.Remediation != nil {
		r := spec.Upgrade.Remediation
		p.UpgradeRetries = r.Retries
		p.UpgradeRemediateLast = r.Retries != 0
		if r.RemediateLastFailure != nil {
			p.UpgradeRemediateLast = *r.RemediateLastFailure
		}
		p.UpgradeStrategyUninstall = r.Strategy == kraanv1.UninstallRemediation
		p.IgnoreTestFailures = p.IgnoreTestFailures || (r.IgnoreTestFailures != nil && *r.IgnoreTestFailures)
	}
	if spec.Install != nil {
		p.InstallRetryInterval = retryIntervalOf(spec.Install.Strategy)
	}
	if spec.Upgrade != nil {
		p.UpgradeRetryInterval = retryIntervalOf(spec.Upgrade.Strategy)
	}
	return p
}

func testOptionsOf(filters []kraanv1.TestFilter) helm.TestOptions {
	var o helm.TestOptions
	for _, f := range filters {
		o.Filters = append(o.Filters, helm.TestFilter{Name: f.Name, Exclude: f.Exclude})
	}
	return o
}

// defaultRetryInterval of the RetryOnFailure strategy, as in Flux.
const defaultRetryInterval = 5 * time.Minute

// retryIntervalOf is the RetryOnFailure interval, or zero under
// RemediateOnFailure (the default).
func retryIntervalOf(s *kraanv1.ActionStrategy) time.Duration {
	switch {
	case s == nil || s.Name != kraanv1.StrategyRetryOnFailure:
		return 0
	case s.RetryInterval == nil || s.RetryInterval.Duration <= 0:
		return defaultRetryInterval
	default:
		return s.RetryInterval.Duration
	}
}

// DriftOf is what a drift check of the release leaves out, and whether it
// corrects: spec.driftDetection.
func DriftOf(spec *kraanv1.HelmReleaseSpec) helm.DriftOptions {
	dd := spec.DriftDetection
	if dd == nil {
		return helm.DriftOptions{}
	}
	opts := helm.DriftOptions{Correct: dd.Mode == kraanv1.DriftDetectionEnabled}
	for _, r := range dd.Ignore {
		rule := jsondiff.IgnoreRule{Paths: r.Paths}
		if t := r.Target; t != nil {
			rule.Selector = &jsondiff.Selector{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		opts.Ignore = append(opts.Ignore, rule)
	}
	return opts
}

// PostRenderersDigest identifies spec.postRenderers and spec.commonMetadata
// together, with spec.postRenderStrategy when it is set: a change to any of
// them changes what is deployed (the strategy decides whether hooks are
// post-rendered), so it upgrades the release. It is empty when there are no
// post-renderers, which matches releases made before (or without) them; an
// unset strategy leaves the digest as it was before the field existed, so
// the operator's new default does not upgrade every release.
func PostRenderersDigest(spec *kraanv1.HelmReleaseSpec) string {
	if len(spec.PostRenderers) == 0 && spec.CommonMetadata == nil {
		return ""
	}
	data, _ := json.Marshal(struct {
		PostRenderers      []kraanv1.PostRenderer     `json:"postRenderers,omitempty"`
		CommonMetadata     *kraanv1.CommonMetadata    `json:"commonMetadata,omitempty"`
		PostRenderStrategy kraanv1.PostRenderStrategy `json:"postRenderStrategy,omitempty"`
	}{spec.PostRenderers, spec.CommonMetadata, spec.PostRenderStrategy})
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
