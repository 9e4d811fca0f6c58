package helm

import (
	"maps"
	"time"

	"helm.sh/helm/v3/pkg/action"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// defaultTimeout of a Helm action when neither the action nor the spec sets one.
const defaultTimeout = 5 * time.Minute

// timeoutOf returns the first timeout set: the action's, then the spec's, then 5m.
func timeoutOf(spec *kraanv1.HelmReleaseSpec, action *metav1.Duration) time.Duration {
	switch {
	case action != nil:
		return action.Duration
	case spec.Timeout != nil:
		return spec.Timeout.Duration
	default:
		return defaultTimeout
	}
}

// PolicyOf reads the test and remediation policy from spec, with Flux's
// defaults: no retries, upgrade failures remediated by rollback, and the last
// upgrade failure remediated only when retries were asked for.
func PolicyOf(spec *kraanv1.HelmReleaseSpec) Policy {
	p := Policy{}
	if spec.Test != nil {
		p.TestEnable = spec.Test.Enable
		p.IgnoreTestFailures = spec.Test.IgnoreFailures
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
	return p
}

func newInstall(cfg *action.Configuration, t Target, spec *kraanv1.HelmReleaseSpec, labels map[string]string) *action.Install {
	opts := spec.Install
	if opts == nil {
		opts = &kraanv1.Install{}
	}
	a := action.NewInstall(cfg)
	a.ReleaseName = t.ReleaseName
	a.Namespace = t.Namespace
	a.Timeout = timeoutOf(spec, opts.Timeout)
	a.Wait = !opts.DisableWait
	a.WaitForJobs = a.Wait && !opts.DisableWaitForJobs
	a.DisableHooks = opts.DisableHooks
	a.DisableOpenAPIValidation = opts.DisableOpenAPIValidation
	a.Replace = opts.Replace
	a.CreateNamespace = opts.CreateNamespace
	a.SkipCRDs = opts.CRDs == kraanv1.CRDsSkip
	a.Labels = labels
	return a
}

func newUpgrade(cfg *action.Configuration, t Target, spec *kraanv1.HelmReleaseSpec, labels map[string]string) *action.Upgrade {
	opts := spec.Upgrade
	if opts == nil {
		opts = &kraanv1.Upgrade{}
	}
	a := action.NewUpgrade(cfg)
	a.Namespace = t.Namespace
	a.Timeout = timeoutOf(spec, opts.Timeout)
	a.Wait = !opts.DisableWait
	a.WaitForJobs = a.Wait && !opts.DisableWaitForJobs
	a.DisableHooks = opts.DisableHooks
	a.DisableOpenAPIValidation = opts.DisableOpenAPIValidation
	a.Force = opts.Force
	a.CleanupOnFail = opts.CleanupOnFail
	// Declarative by default: the values are exactly the spec's, not merged
	// with whatever the previous revision had.
	a.ResetValues = !opts.PreserveValues
	a.ReuseValues = opts.PreserveValues
	a.SkipCRDs = true // crds/ is applied by the engine per the upgrade CRDs policy
	a.MaxHistory = maxHistory(spec)
	// Helm copies the previous revision's labels into the new one unless a
	// label's value is "null": an upgrade of an interrupted revision is not
	// interrupted itself.
	a.Labels = maps.Clone(labels)
	a.Labels[InterruptedLabel] = "null"
	return a
}

func newRollback(cfg *action.Configuration, spec *kraanv1.HelmReleaseSpec, version int) *action.Rollback {
	opts := spec.Rollback
	if opts == nil {
		opts = &kraanv1.Rollback{}
	}
	a := action.NewRollback(cfg)
	a.Version = version
	a.Timeout = timeoutOf(spec, opts.Timeout)
	a.Wait = !opts.DisableWait
	a.WaitForJobs = a.Wait && !opts.DisableWaitForJobs
	a.DisableHooks = opts.DisableHooks
	a.Force = opts.Force
	a.Recreate = opts.Recreate
	a.CleanupOnFail = opts.CleanupOnFail
	a.MaxHistory = maxHistory(spec)
	return a
}

func newUninstall(cfg *action.Configuration, spec *kraanv1.HelmReleaseSpec) *action.Uninstall {
	opts := spec.Uninstall
	if opts == nil {
		opts = &kraanv1.Uninstall{}
	}
	a := action.NewUninstall(cfg)
	a.Timeout = timeoutOf(spec, opts.Timeout)
	a.DisableHooks = opts.DisableHooks
	a.KeepHistory = opts.KeepHistory
	a.Wait = !opts.DisableWait
	a.DeletionPropagation = opts.DeletionPropagation
	if a.DeletionPropagation == "" {
		a.DeletionPropagation = "background"
	}
	a.IgnoreNotFound = true
	return a
}

func newTest(cfg *action.Configuration, t Target, spec *kraanv1.HelmReleaseSpec) *action.ReleaseTesting {
	var actionTimeout *metav1.Duration
	if spec.Test != nil {
		actionTimeout = spec.Test.Timeout
	}
	a := action.NewReleaseTesting(cfg)
	a.Namespace = t.Namespace
	a.Timeout = timeoutOf(spec, actionTimeout)
	return a
}

func maxHistory(spec *kraanv1.HelmReleaseSpec) int {
	if spec.MaxHistory == nil {
		return 5
	}
	return *spec.MaxHistory
}
