package helm

import (
	"maps"
	"strconv"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// defaultTimeout of a Helm action when neither the action nor the release sets one.
const defaultTimeout = 5 * time.Minute

func newInstall(cfg *action.Configuration, t Target, acts Actions, apply ApplyMethods, labels map[string]string) *action.Install {
	opts := acts.Install
	a := action.NewInstall(cfg)
	a.ReleaseName = t.ReleaseName
	a.Namespace = t.Namespace
	a.Timeout = acts.timeout(opts.Timeout)
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
	a.SkipCRDs = acts.installCRDs() != kraanv1.CRDsCreate
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

// newUpgrade upgrades from last, the newest record (its apply method is
// what ApplyAuto follows).
func newUpgrade(cfg *action.Configuration, t Target, acts Actions, apply ApplyMethods, last *release.Release, labels map[string]string) *action.Upgrade {
	opts := acts.Upgrade
	a := action.NewUpgrade(cfg)
	a.Namespace = t.Namespace
	a.Timeout = acts.timeout(opts.Timeout)
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
	a.MaxHistory = acts.maxHistory()
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
func newRollback(cfg *action.Configuration, acts Actions, apply ApplyMethods, target *release.Release) *action.Rollback {
	opts := acts.Rollback
	a := action.NewRollback(cfg)
	a.Version = target.Version
	a.Timeout = acts.timeout(opts.Timeout)
	a.WaitStrategy = waitStrategyOf(!opts.DisableWait)
	a.WaitForJobs = !opts.DisableWait && !opts.DisableWaitForJobs
	a.DisableHooks = opts.DisableHooks
	ssa := apply.Rollback.serverSide(target)
	a.ServerSideApply = strconv.FormatBool(ssa)
	a.ForceReplace, a.ForceConflicts = forceOf(opts.Force, ssa)
	// spec.rollback.recreate: Helm 4 has no pod restart on rollback.
	a.CleanupOnFail = opts.CleanupOnFail
	a.MaxHistory = acts.maxHistory()
	return a
}

func newUninstall(cfg *action.Configuration, acts Actions) *action.Uninstall {
	opts := acts.Uninstall
	a := action.NewUninstall(cfg)
	a.Timeout = acts.timeout(opts.Timeout)
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

func newTest(cfg *action.Configuration, t Target, acts Actions) *action.ReleaseTesting {
	a := action.NewReleaseTesting(cfg)
	for _, f := range acts.Test.Filters {
		key := action.IncludeNameFilter
		if f.Exclude {
			key = action.ExcludeNameFilter
		}
		a.Filters[key] = append(a.Filters[key], f.Name)
	}
	a.Namespace = t.Namespace
	a.Timeout = acts.timeout(acts.Test.Timeout)
	return a
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
