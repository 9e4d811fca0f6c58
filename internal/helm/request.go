package helm

import (
	"context"
	"time"

	"helm.sh/helm/v4/pkg/postrenderer"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/kraan-io/kraan-operator/internal/redact"
)

// Request is one reconciliation of a release.
type Request struct {
	Target  Target
	Desired Desired
	// Actions say how Helm's actions run (timeouts, waits, remediation).
	Actions  Actions
	Failures Failures
	// PostRenderer, when set, changes what the chart rendered before Helm
	// applies it on install and upgrade (owner references for chart-backed kinds).
	PostRenderer postrenderer.PostRenderer
	// BeforeAction, when set, is called before each action starts: the
	// controller reports progress on the object while Helm works, which may
	// take until the action's timeout.
	BeforeAction func(ctx context.Context, action Action)
	// Redactor, when set, masks secret values in Helm's log lines and in the
	// errors of the actions, before they are logged or returned.
	Redactor *redact.Redactor
	// Pause, when set, is called when an action starts waiting for its
	// objects to become ready; the function it returns is called when the
	// wait ends. The controller lends the run's slot to other releases
	// meanwhile.
	Pause func() (resume func())
	// WaitSuperseded, when closed, ends the wait of the action going on
	// with ErrWaitSuperseded: a newer desired state arrived, and waiting
	// for this one to become ready would only delay it (Flux 2.8's
	// CancelHealthCheckOnNewRevision). The revision is then left failed and
	// marked interrupted, not counted and not remediated, and the run ends;
	// the caller starts the next with the newer state.
	WaitSuperseded <-chan struct{}
	// Force upgrades a release that is in sync, once (Flux's
	// reconcile.fluxcd.io/forceAt).
	Force bool
	// StorageEmpty says the operator's cache holds no record of the release:
	// the first action is planned without reading storage.
	StorageEmpty bool
	// Apply says how install, upgrade and rollback write the release's
	// objects; the zero value applies client-side, as Helm 3 did.
	Apply ApplyMethods
	// ReinstallOnChartNameChange uninstalls a release whose newest revision
	// was made from a chart of another name before installing the desired
	// chart (spec.upgrade.chartNameChangeStrategy Reinstall); false upgrades
	// it in place.
	ReinstallOnChartNameChange bool
}

// ActionTaken is one Helm action the engine took in a run.
type ActionTaken struct {
	Action   Action
	Err      error
	Duration time.Duration
	// LogTail is the end of Helm's log during the action: on a failed wait it
	// names the object that was not ready and why.
	LogTail []string
	// Detail says what a successful action found, when that is news to the
	// user: for an unlock, the revision an interrupted operation left pending.
	Detail string
	// Reinstall marks an uninstall taken because the chart name changed
	// (Request.ReinstallOnChartNameChange), not to remediate a failure.
	Reinstall bool
}

// Result is what Run did and what storage holds afterwards.
type Result struct {
	Taken []ActionTaken
	// Next is the action planned after the last one taken: ActionNone when the
	// release is in sync, ActionStalled when retries are exhausted.
	Next     Action
	Failures Failures
	Latest   *release.Release
	// WrittenOutside is the newest revision as the run found it, when another
	// Helm client wrote it (see WrittenOutside): the controller reports it.
	WrittenOutside *Revision
}
