package helm

import (
	"maps"
	"strconv"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
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

// TimeoutOf is the timeout of the release's actions that set none of
// their own: spec.timeout, else Helm's 5m.
func TimeoutOf(spec *kraanv1.HelmReleaseSpec) time.Duration { return timeoutOf(spec, nil) }

// PolicyOf reads the test and remediation policy from spec, with Flux's
// defaults: no retries, upgrade failures remediated by rollback, and the last
// upgrade failure remediated only when retries were asked for.
func PolicyOf(spec *kraanv1.HelmReleaseSpec) Policy {
	p := Policy{}
	if spec.Test != nil {
		p.TestEnable = spec.Test.Enable
		p.IgnoreTestFailures = spec.Test.IgnoreFailures
		if filters := spec.Test.Filters; len(filters) > 0 {
			p.TestSelected = func(name string) bool { return testSelected(filters, name) }
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

func newInstall(cfg *action.Configuration, t Target, spec *kraanv1.HelmReleaseSpec, apply ApplyMethods, labels map[string]string) *action.Install {
	opts := spec.Install
	if opts == nil {
		opts = &kraanv1.Install{}
	}
	a := action.NewInstall(cfg)
	a.ReleaseName = t.ReleaseName
	a.Namespace = t.Namespace
	a.Timeout = timeoutOf(spec, opts.Timeout)
	a.WaitStrategy = waitStrategyOf(!opts.DisableWait)
	a.WaitForJobs = !opts.DisableWait && !opts.DisableWaitForJobs
	a.DisableHooks = opts.DisableHooks
	a.DisableOpenAPIValidation = opts.DisableOpenAPIValidation
	a.Replace = opts.Replace
	a.ServerSideApply = apply.Install.serverSide(nil)
	a.ForceConflicts = a.ServerSideApply // always under server-side apply: forceOf
	a.PostRenderStrategy = postRenderStrategyOf(t.PostRenderStrategy)
	a.CreateNamespace = opts.CreateNamespace
	// Helm's install only creates CRDs that do not exist; CreateReplace is
	// the engine's (applyCRDs, before the install).
	a.SkipCRDs = InstallCRDsPolicy(spec) != kraanv1.CRDsCreate
	a.SkipSchemaValidation = opts.DisableSchemaValidation
	a.TakeOwnership = !opts.DisableTakeOwnership
	a.Labels = labels
	return a
}

// postRenderStrategyOf is Helm's post-render strategy for ours; empty is
// nohooks, Helm 3's (Helm 4's own default is combined).
func postRenderStrategyOf(s kraanv1.PostRenderStrategy) action.PostRenderStrategy {
	switch s {
	case kraanv1.PostRenderStrategyCombined:
		return action.PostRenderStrategyCombined
	case kraanv1.PostRenderStrategySeparate:
		return action.PostRenderStrategySeparate
	default:
		return action.PostRenderStrategyNoHooks
	}
}

// InstallCRDsPolicy is spec.install.crds; unset, it is Skip when the older
// spec.install.skipCRDs is set and Create otherwise, as in Flux.
func InstallCRDsPolicy(spec *kraanv1.HelmReleaseSpec) string {
	switch {
	case spec.Install == nil:
		return kraanv1.CRDsCreate
	case spec.Install.CRDs != "":
		return spec.Install.CRDs
	case spec.Install.SkipCRDs:
		return kraanv1.CRDsSkip
	default:
		return kraanv1.CRDsCreate
	}
}

// newUpgrade upgrades from last, the newest record (its apply method is
// what ApplyAuto follows).
func newUpgrade(cfg *action.Configuration, t Target, spec *kraanv1.HelmReleaseSpec, apply ApplyMethods, last *release.Release, labels map[string]string) *action.Upgrade {
	opts := spec.Upgrade
	if opts == nil {
		opts = &kraanv1.Upgrade{}
	}
	a := action.NewUpgrade(cfg)
	a.Namespace = t.Namespace
	a.Timeout = timeoutOf(spec, opts.Timeout)
	a.WaitStrategy = waitStrategyOf(!opts.DisableWait)
	a.WaitForJobs = !opts.DisableWait && !opts.DisableWaitForJobs
	a.DisableHooks = opts.DisableHooks
	a.DisableOpenAPIValidation = opts.DisableOpenAPIValidation
	ssa := apply.Upgrade.serverSide(last)
	a.ServerSideApply = strconv.FormatBool(ssa)
	a.ForceReplace, a.ForceConflicts = forceOf(opts.Force, ssa)
	a.PostRenderStrategy = postRenderStrategyOf(t.PostRenderStrategy)
	a.CleanupOnFail = opts.CleanupOnFail
	// Declarative by default: the values are exactly the spec's, not merged
	// with whatever the previous revision had.
	a.ResetValues = !opts.PreserveValues
	a.ReuseValues = opts.PreserveValues
	a.SkipCRDs = true // crds/ is applied by the engine per the upgrade CRDs policy
	a.SkipSchemaValidation = opts.DisableSchemaValidation
	a.TakeOwnership = !opts.DisableTakeOwnership
	a.MaxHistory = maxHistory(spec)
	// Helm copies the previous revision's labels into the new one unless a
	// label's value is "null": an upgrade of an interrupted revision is not
	// interrupted itself.
	a.Labels = maps.Clone(labels)
	a.Labels[InterruptedLabel] = "null"
	if _, set := a.Labels[PostRenderersDigestLabel]; !set {
		a.Labels[PostRenderersDigestLabel] = "null" // post-renderers were removed
	}
	return a
}

// newRollback rolls back to target, whose apply method is what ApplyAuto
// follows.
func newRollback(cfg *action.Configuration, spec *kraanv1.HelmReleaseSpec, apply ApplyMethods, target *release.Release) *action.Rollback {
	opts := spec.Rollback
	if opts == nil {
		opts = &kraanv1.Rollback{}
	}
	a := action.NewRollback(cfg)
	a.Version = target.Version
	a.Timeout = timeoutOf(spec, opts.Timeout)
	a.WaitStrategy = waitStrategyOf(!opts.DisableWait)
	a.WaitForJobs = !opts.DisableWait && !opts.DisableWaitForJobs
	a.DisableHooks = opts.DisableHooks
	ssa := apply.Rollback.serverSide(target)
	a.ServerSideApply = strconv.FormatBool(ssa)
	a.ForceReplace, a.ForceConflicts = forceOf(opts.Force, ssa)
	// spec.rollback.recreate: Helm 4 has no pod restart on rollback.
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
	a.WaitStrategy = waitStrategyOf(!opts.DisableWait)
	a.DeletionPropagation = opts.DeletionPropagation
	if a.DeletionPropagation == "" {
		a.DeletionPropagation = "background"
	}
	a.IgnoreNotFound = true
	return a
}

func newTest(cfg *action.Configuration, t Target, spec *kraanv1.HelmReleaseSpec) *action.ReleaseTesting {
	var actionTimeout *metav1.Duration
	a := action.NewReleaseTesting(cfg)
	if spec.Test != nil {
		actionTimeout = spec.Test.Timeout
		for _, f := range spec.Test.Filters {
			key := action.IncludeNameFilter
			if f.Exclude {
				key = action.ExcludeNameFilter
			}
			a.Filters[key] = append(a.Filters[key], f.Name)
		}
	}
	a.Namespace = t.Namespace
	a.Timeout = timeoutOf(spec, actionTimeout)
	return a
}

// testSelected is Helm's reading of test filters: excluded names never run;
// when some names are included, only those run.
func testSelected(filters []kraanv1.TestFilter, name string) bool {
	included := false
	for _, f := range filters {
		if f.Name == name && f.Exclude {
			return false
		}
		if f.Name == name && !f.Exclude {
			return true
		}
		included = included || !f.Exclude
	}
	return !included
}

// SchemaValidated says whether values are checked against the chart's
// values.schema.json before the next action: not when install or upgrade
// turns the check off (Helm still checks per action, with its own flag).
func SchemaValidated(spec *kraanv1.HelmReleaseSpec) bool {
	return (spec.Install == nil || !spec.Install.DisableSchemaValidation) &&
		(spec.Upgrade == nil || !spec.Upgrade.DisableSchemaValidation)
}

func maxHistory(spec *kraanv1.HelmReleaseSpec) int {
	if spec.MaxHistory == nil {
		return 5
	}
	return *spec.MaxHistory
}

// waitStrategyOf is the Helm wait strategy of an action that waits, or not.
// The engine serves every wait itself (watchingClient) and only tells
// "wait" from "hooks only"; LegacyStrategy names Helm 3's behaviour.
func waitStrategyOf(wait bool) kube.WaitStrategy {
	if wait {
		return kube.LegacyStrategy
	}
	return kube.HookOnlyStrategy
}

// ApplyMethod says how an action writes a release's objects, with the
// values of Flux's spec.{install,upgrade,rollback}.serverSideApply.
type ApplyMethod string

const (
	// ApplyDisabled applies client-side (Helm 3's three-way merge). The
	// empty method is ApplyDisabled.
	ApplyDisabled ApplyMethod = "disabled"
	// ApplyEnabled applies server-side, as the field manager FieldManager.
	ApplyEnabled ApplyMethod = "enabled"
	// ApplyAuto applies as the record the action starts from was applied
	// (its apply_method; none is client-side): an upgrade's newest record,
	// a rollback's target. An install applies server-side.
	ApplyAuto ApplyMethod = "auto"
)

// ApplyMethods are the apply methods of the actions that write objects.
// The zero value applies client-side everywhere, as Helm 3 did.
type ApplyMethods struct {
	Install  ApplyMethod
	Upgrade  ApplyMethod
	Rollback ApplyMethod
}

// serverSide says whether an action applies server-side when it starts from
// record (nil for an install).
func (m ApplyMethod) serverSide(record *release.Release) bool {
	switch m {
	case ApplyEnabled:
		return true
	case ApplyAuto:
		return record == nil || record.ApplyMethod == string(release.ApplyMethodServerSideApply)
	default:
		return false
	}
}

// forceOf is how an action forces its writes, as Flux v1.5+ does. Under
// server-side apply conflicts are always forced: the release's objects are
// the release's, whoever wrote a field last (kubectl, an earlier field
// manager such as Flux's helm-controller, a drift correction), and an
// upgrade that stopped on a conflict would leave drift in place. spec's
// force (replace objects) is a client-side notion; under server-side apply
// it is ignored, as Flux ignores it, since Helm refuses the two together.
func forceOf(force, serverSide bool) (replace, conflicts bool) {
	return force && !serverSide, serverSide
}
