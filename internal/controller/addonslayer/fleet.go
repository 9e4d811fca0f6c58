package addonslayer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/fleet"
)

// Bounds of a placed layer's pass.
const (
	// clusterPassTimeout bounds one cluster's part of a pass: a cluster
	// that stops answering mid-pass holds the layer's worker this long at
	// most, and never the other clusters, which run beside it.
	clusterPassTimeout = 45 * time.Second
	// concurrentClusters bounds the clusters one pass works on at once.
	concurrentClusters = 8
	// unreachableRetry is how soon an unreachable cluster is tried again.
	unreachableRetry = 30 * time.Second
)

// fleetPass is what a placed layer's pass did, for the layer's outcome.
type fleetPass struct {
	members  int
	deployed int
	message  string
}

// reconcilePlacement runs a placed layer (spec.placement) on its clusters
// instead of the operator's own: it chooses the registered clusters, puts
// them in waves, plans which of them take the version this pass (see
// fleet.PlanRollout), and runs the layer's steps — hand-over, prerequisites
// (dependsOn per cluster), apply, readiness, layer tests — on each, beside
// one another. The version's objects are kept (fleet.Snapshots) so that a
// cluster moving on prunes what the version it leaves had, and a failed
// rollout can return to the version before.
func (r *Reconciler) reconcilePlacement(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	placement := sc.layer.Spec.Placement
	registered, members, waves, err := r.placementMembers(ctx, sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	target := fleet.Target{Version: sc.layer.Spec.Version, Revision: sc.revision}
	versions := map[fleet.Target]fleet.Version{target: {Objects: sc.objects, Tests: sc.tests}}
	if err := r.Snapshots.Save(ctx, sc.layer, target, versions[target]); err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonApplyFailed, err)
	}
	entries := map[string]kraanv1.LayerClusterStatus{}
	for _, e := range sc.layer.Status.Clusters {
		entries[e.Cluster] = e
	}
	plan := fleet.PlanRollout(members, waves, entries, fleet.NextRollout(sc.layer.Status.Rollout, target), placement.RollbackOnFailure)
	previous := fleet.Previous(plan.Rollout)
	if err := r.loadVersions(ctx, sc, versions, append(allClusterVersions(sc.layer.Status.Clusters), previous)); err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonApplyFailed, err)
	}

	results := make([]kraanv1.LayerClusterStatus, len(members), len(members)+len(sc.layer.Status.Clusters))
	g := errgroup.Group{}
	g.SetLimit(concurrentClusters)
	for i, m := range members {
		entry := entries[m.Cluster.Key]
		entry.Cluster, entry.Wave = m.Cluster.Key, m.WaveName
		to := target
		switch plan.Actions[m.Cluster.Key] {
		case fleet.RollBack:
			to = previous
		case fleet.Wait:
			results[i] = waitingEntry(entry, plan.Why[m.Cluster.Key], sc.now)
			continue
		}
		g.Go(func() error {
			results[i] = r.runOnCluster(ctx, sc, m.Cluster, entry, to, versions)
			return nil
		})
	}
	_ = g.Wait()
	results = append(results, r.withdraw(ctx, sc, registered, members, versions)...)
	sc.layer.Status.Clusters = results
	byKey := map[string]kraanv1.LayerClusterStatus{}
	for _, e := range results {
		byKey[e.Cluster] = e
	}
	assessed := fleet.Assess(plan.Rollout, members, byKey, placement.RollbackOnFailure)
	sc.layer.Status.Rollout = &assessed
	if err := r.Snapshots.Prune(ctx, sc.layer.Name, keptVersions(assessed, results)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Pruning the layer's snapshots failed; they are pruned on a later pass")
	}
	return ctrl.Result{}, placementOutcome(sc, assessed, members)
}

// placementMembers are the registered clusters and those the placement
// chooses, in their waves.
func (r *Reconciler) placementMembers(ctx context.Context, sc *layerScope) ([]fleet.Cluster, []fleet.Member, []fleet.Wave, error) {
	placement := sc.layer.Spec.Placement
	selector, err := metav1.LabelSelectorAsSelector(&placement.ClusterSelector)
	if err != nil {
		return nil, nil, nil, stalledFailure(kraanv1.ReasonInvalidPlacement, "spec.placement.clusterSelector: "+err.Error())
	}
	registered, err := r.Fleet.Registered(ctx)
	if err != nil {
		return nil, nil, nil, failed(kraanv1.ReasonReconcileError, err)
	}
	members, waves, err := fleet.AssignWaves(fleet.Select(registered, selector), placement.Waves)
	if err != nil {
		return nil, nil, nil, stalledFailure(kraanv1.ReasonInvalidPlacement, err.Error())
	}
	return registered, members, waves, nil
}

// loadVersions reads the versions ts of the layer into versions.
func (r *Reconciler) loadVersions(ctx context.Context, sc *layerScope, versions map[fleet.Target]fleet.Version, ts []fleet.Target) error {
	for _, t := range ts {
		if err := r.loadVersion(ctx, sc, versions, t); err != nil {
			return err
		}
	}
	return nil
}

// allClusterVersions are the versions the clusters of entries may hold.
func allClusterVersions(entries []kraanv1.LayerClusterStatus) []fleet.Target {
	out := make([]fleet.Target, 0, 2*len(entries))
	for _, e := range entries {
		out = append(out, clusterVersions(e)...)
	}
	return out
}

// loadVersion reads version t of the layer into versions, once.
func (r *Reconciler) loadVersion(ctx context.Context, sc *layerScope, versions map[fleet.Target]fleet.Version, t fleet.Target) error {
	if t.IsZero() {
		return nil
	}
	if _, ok := versions[t]; ok {
		return nil
	}
	v, found, err := r.Snapshots.Load(ctx, sc.layer.Name, t)
	if err != nil {
		return err
	}
	if found {
		versions[t] = v
	}
	return nil
}

// clusterVersions are the versions a cluster may have objects of: the one
// it last deployed, the one it was being brought to, and those it is leaving.
func clusterVersions(e kraanv1.LayerClusterStatus) []fleet.Target {
	out := []fleet.Target{}
	all := make([]fleet.Target, 0, 2+len(e.Leaving))
	all = append(all, fleet.Target{Version: e.DeployedVersion, Revision: e.DeployedRevision}, fleet.Target{Version: e.Version, Revision: e.Revision})
	for _, l := range e.Leaving {
		all = append(all, fleet.Target{Version: l.Version, Revision: l.Revision})
	}
	for _, t := range all {
		if !t.IsZero() && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// keptVersions are the versions whose snapshots are still needed.
func keptVersions(rollout kraanv1.RolloutStatus, clusters []kraanv1.LayerClusterStatus) []fleet.Target {
	return append(allClusterVersions(clusters), fleet.Target{Version: rollout.Version, Revision: rollout.Revision}, fleet.Previous(rollout))
}

// waitingEntry is a cluster left as it is this pass, and why.
func waitingEntry(e kraanv1.LayerClusterStatus, why string, now time.Time) kraanv1.LayerClusterStatus {
	next := e
	switch e.State {
	case kraanv1.UnreachableState, kraanv1.FailedState:
		// Its failure stays what it says until the cluster's turn comes.
	default:
		next.State, next.Reason = kraanv1.WaitingState, kraanv1.WaitingState
	}
	if e.State != kraanv1.FailedState {
		next.Message = why
		if e.DeployedVersion != "" {
			next.Message += "; version " + e.DeployedVersion + " is deployed"
		}
	}
	return stamped(e, next, now)
}

// maxClusterMessage bounds a cluster entry's message: a layer on a
// thousand clusters writes a thousand of them into one object, and a failed
// layer test's output is long. The layer's own conditions carry it whole.
const maxClusterMessage = 1024

// stamped sets next's transition time: now when its state or version
// changed since e; and bounds its message.
func stamped(e, next kraanv1.LayerClusterStatus, now time.Time) kraanv1.LayerClusterStatus {
	if len(next.Message) > maxClusterMessage {
		next.Message = strings.ToValidUTF8(next.Message[:maxClusterMessage], "") + "…"
	}
	if next.State != e.State || next.Version != e.Version || next.Revision != e.Revision || next.LastTransitionTime.IsZero() {
		next.LastTransitionTime = metav1.NewTime(now)
	}
	return next
}

// runOnCluster brings one cluster to version t, as one pass of the layer's
// own steps with the cluster's client, and returns its new entry.
func (r *Reconciler) runOnCluster(ctx context.Context, sc *layerScope, cluster fleet.Cluster, entry kraanv1.LayerClusterStatus,
	t fleet.Target, versions map[fleet.Target]fleet.Version) kraanv1.LayerClusterStatus {
	ctx, cancel := context.WithTimeout(ctx, clusterPassTimeout)
	defer cancel()
	v, ok := versions[t]
	if !ok {
		next := entry
		next.State, next.Reason = kraanv1.FailedState, kraanv1.ReasonApplyFailed
		next.Message = fmt.Sprintf("version %s, revision %s is no longer known: it cannot be applied again", t.Version, t.Revision)
		return stamped(entry, next, sc.now)
	}
	conn, err := r.Fleet.Connect(ctx, cluster)
	if err == nil {
		_, err = conn.Discovery.ServerVersion() // one request: does it answer?
	}
	if err != nil {
		return unreachableEntry(entry, cluster, sc.redactor.Error(err), sc.now)
	}
	csc := clusterScope(sc, cluster.Key, conn, r.ownsOnCluster(cluster.Key), entry, t, v, versions)
	var stepErr error
	for _, step := range []func(context.Context, *layerScope) (ctrl.Result, error){
		r.reconcileHandover, r.reconcilePrerequisites, r.reconcileApply, r.reconcileReadiness, r.reconcileLayerTests,
	} {
		if _, stepErr = step(ctx, csc); stepErr != nil {
			break
		}
	}
	if stepErr != nil && isUnreachable(stepErr) {
		return unreachableEntry(entry, cluster, sc.redactor.Error(stepErr), sc.now)
	}
	next := entryAfter(sc, csc, entry, t, v, stepErr)
	if next.State != entry.State && (next.State == kraanv1.DeployedState || next.State == kraanv1.FailedState) {
		r.clusterEvent(sc, next)
	}
	return next
}

// entryAfter is a cluster's entry after the steps brought it towards t and
// ended with stepErr (nil: through every step).
func entryAfter(sc, csc *layerScope, entry kraanv1.LayerClusterStatus, t fleet.Target, v fleet.Version, stepErr error) kraanv1.LayerClusterStatus {
	next := entry
	next.Version, next.Revision, next.Leaving = t.Version, t.Revision, nil
	if !csc.pruneAt.IsZero() || stepErr != nil { // released objects wait, or the hand-over may not have run
		next.Leaving = leaving(entry, t)
	}
	switch {
	case stepErr != nil:
		out := outcomeOf(sc.redactor.Error(stepErr))
		next.State, next.Reason, next.Message = out.state, out.reason, out.message
	case !csc.pruneAt.IsZero():
		next.State, next.Reason = kraanv1.PruningState, kraanv1.ReasonProgressing
		next.Message = fmt.Sprintf("version %s is applied and ready; objects it no longer defines are pruned at %s unless another layer adopts them",
			t.Version, csc.pruneAt.UTC().Format(time.RFC3339))
	default:
		next.State, next.Reason = kraanv1.DeployedState, kraanv1.ReasonDeployed
		next.DeployedVersion, next.DeployedRevision = t.Version, t.Revision
		next.Message = fmt.Sprintf("version %s is Deployed, revision %s, %d objects ready", t.Version, t.Revision, len(v.Objects))
		if len(v.Tests) > 0 {
			next.Message += fmt.Sprintf(", %d layer tests passed", len(v.Tests))
		}
	}
	next = stamped(entry, next, sc.now)
	if next.State == kraanv1.ApplyingState && !csc.applyingSince.IsZero() {
		next.LastTransitionTime = metav1.NewTime(csc.applyingSince) // spec.timeout counts from there
	}
	return next
}

// leaving are the versions other than t whose objects entry's cluster may
// hold: those whose released objects still wait to be pruned.
func leaving(entry kraanv1.LayerClusterStatus, t fleet.Target) []kraanv1.LayerVersion {
	var out []kraanv1.LayerVersion
	for _, vt := range clusterVersions(entry) {
		if vt != t && len(out) < maxLeaving {
			out = append(out, kraanv1.LayerVersion{Version: vt.Version, Revision: vt.Revision})
		}
	}
	return out
}

// maxLeaving is status.clusters[].leaving's bound.
const maxLeaving = 4

// clusterScope is the layer as the steps see it on one cluster: the
// cluster's client, version t's objects, and a status made of the cluster's
// entry, whose inventory is what the versions the cluster ran defined, so
// that what t no longer defines is released and pruned there.
func clusterScope(sc *layerScope, key string, conn *fleet.Connection, owns apply.OwnershipFunc, entry kraanv1.LayerClusterStatus,
	t fleet.Target, v fleet.Version, versions map[fleet.Target]fleet.Version) *layerScope {
	l := sc.layer.DeepCopy()
	l.Spec.Version = t.Version
	l.Status = kraanv1.AddonsLayerStatus{State: entry.State, Version: entry.Version, Revision: entry.Revision}
	seen := map[string]bool{}
	for _, vt := range clusterVersions(entry) {
		old := versions[vt]
		for _, obj := range append(slices.Clone(old.Objects), old.Tests...) {
			ref := apply.RefOf(obj)
			if !seen[ref.Key()] {
				seen[ref.Key()] = true
				l.Status.Resources = append(l.Status.Resources, kraanv1.Resource{APIVersion: ref.APIVersion, Kind: ref.Kind,
					Namespace: ref.Namespace, Name: ref.Name, Status: kraanv1.DeployedState, LastTransitionTime: entry.LastTransitionTime})
			}
		}
	}
	if entry.Version == t.Version && entry.Revision == t.Revision {
		deployed := entry.State == kraanv1.DeployedState
		reason := kraanv1.ReasonProgressing
		if deployed {
			reason = kraanv1.ReasonDeployed
		}
		setLayerCondition(l, kraanv1.DeployedCondition, deployed, reason, entry.Message)
		apimeta.FindStatusCondition(l.Status.Conditions, kraanv1.DeployedCondition).LastTransitionTime = entry.LastTransitionTime
	}
	return &layerScope{
		layer: l, now: sc.now, interval: sc.interval, revision: t.Revision,
		objects: cloneAll(v.Objects), tests: cloneAll(v.Tests), redactor: sc.redactor,
		applier: conn.Applier().WithOwnership(owns), discovery: conn.Discovery, cluster: key,
	}
}

// ownsOnCluster is the proof of ownership on a cluster layers are placed
// on: the owning layer, read from the management cluster, is placed on it
// and a version it runs there defines the object. The object's layer label
// is anyone's to write on that cluster; this is not.
func (r *Reconciler) ownsOnCluster(cluster string) apply.OwnershipFunc {
	return func(ctx context.Context, layer string, ref apply.Ref) (bool, error) {
		l := &kraanv1.AddonsLayer{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: layer}, l); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("reading layer %s, which %s is labelled for: %w", layer, ref, err)
		}
		i := slices.IndexFunc(l.Status.Clusters, func(e kraanv1.LayerClusterStatus) bool { return e.Cluster == cluster })
		if l.Spec.Placement == nil || i < 0 {
			return false, nil
		}
		for _, t := range clusterVersions(l.Status.Clusters[i]) {
			v, found, err := r.Snapshots.Load(ctx, layer, t)
			if err != nil {
				return false, err
			}
			if found && slices.ContainsFunc(slices.Concat(v.Objects, v.Tests), func(o *unstructured.Unstructured) bool {
				return apply.RefOf(o).Key() == ref.Key()
			}) {
				return true, nil
			}
		}
		return false, nil
	}
}

// cloneAll copies objs: the steps stamp test runs on them, and clusters run
// beside one another.
func cloneAll(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

// unreachableEntry reports a cluster that did not answer, or whose
// kubeconfig cannot be used.
func unreachableEntry(e kraanv1.LayerClusterStatus, cluster fleet.Cluster, err error, now time.Time) kraanv1.LayerClusterStatus {
	next := e
	next.State, next.Reason = kraanv1.UnreachableState, kraanv1.ReasonClusterUnreachable
	if errors.Is(err, fleet.ErrNoKubeConfig) {
		next.Reason = kraanv1.ReasonKubeConfigError
	}
	next.Message = fmt.Sprintf("%s %s: %v", cluster.Kind, cluster.Key, err)
	return stamped(e, next, now)
}

// isUnreachable says whether err is the cluster not answering, rather than
// answering with an error.
func isUnreachable(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

// withdraw prunes the layer from the clusters it was on and is no longer
// placed on (their labels changed, or the placement's selector did), and
// returns the entries of those still being pruned. A cluster no longer
// registered cannot be reached: its objects stay, and an event says so.
func (r *Reconciler) withdraw(ctx context.Context, sc *layerScope, registered []fleet.Cluster, members []fleet.Member,
	versions map[fleet.Target]fleet.Version) []kraanv1.LayerClusterStatus {
	placed := map[string]bool{}
	for _, m := range members {
		placed[m.Cluster.Key] = true
	}
	var out []kraanv1.LayerClusterStatus
	for _, e := range sc.layer.Status.Clusters {
		if placed[e.Cluster] {
			continue
		}
		i := slices.IndexFunc(registered, func(c fleet.Cluster) bool { return c.Key == e.Cluster })
		if i < 0 {
			r.Events.Warning(sc.layer, kraanv1.ReasonClusterUnreachable, fmt.Sprintf(
				"cluster %s is no longer registered: the layer's objects on it were left in place", e.Cluster))
			continue
		}
		if next, pending := r.withdrawFrom(ctx, sc, registered[i], e, versions); pending {
			out = append(out, next)
		}
	}
	return out
}

// withdrawFrom releases every object of the layer on cluster; pending is
// true while some wait for their grace period or the cluster did not answer.
func (r *Reconciler) withdrawFrom(ctx context.Context, sc *layerScope, cluster fleet.Cluster, e kraanv1.LayerClusterStatus,
	versions map[fleet.Target]fleet.Version) (kraanv1.LayerClusterStatus, bool) {
	ctx, cancel := context.WithTimeout(ctx, clusterPassTimeout)
	defer cancel()
	conn, err := r.Fleet.Connect(ctx, cluster)
	if err != nil {
		return unreachableEntry(e, cluster, sc.redactor.Error(err), sc.now), true
	}
	csc := clusterScope(sc, cluster.Key, conn, r.ownsOnCluster(cluster.Key), e, fleet.Target{}, fleet.Version{}, versions)
	pending, until, err := r.releaseAll(ctx, csc, nil)
	next := e
	next.Wave = ""
	switch {
	case err != nil && isUnreachable(err):
		return unreachableEntry(e, cluster, sc.redactor.Error(err), sc.now), true
	case err != nil:
		next.State, next.Reason, next.Message = kraanv1.FailedState, kraanv1.ReasonPruneFailed, sc.redactor.Error(err).Error()
	case len(pending) > 0:
		next.State, next.Reason = kraanv1.PruningState, kraanv1.ReasonDeleting
		next.Message = fmt.Sprintf("no longer placed here: %d objects are released and pruned at %s unless another layer adopts them",
			len(pending), until.UTC().Format(time.RFC3339))
	default:
		r.Events.Normal(sc.layer, "Withdrawn", fmt.Sprintf("cluster %s: the layer's objects were pruned or adopted", e.Cluster))
		return next, false
	}
	return stamped(e, next, sc.now), true
}

// clusterEvent records a cluster reaching Deployed or Failed.
func (r *Reconciler) clusterEvent(sc *layerScope, e kraanv1.LayerClusterStatus) {
	msg := fmt.Sprintf("cluster %s: %s", e.Cluster, e.Message)
	if e.State == kraanv1.FailedState {
		r.Events.Warning(sc.layer, e.Reason, msg)
		return
	}
	r.Events.Normal(sc.layer, e.Reason, msg)
}

// placementOutcome is the layer's outcome from its rollout: Deployed when
// complete on every cluster; Applying while it progresses; Failed when
// halted or rolled back, or while a cluster is unreachable.
func placementOutcome(sc *layerScope, rollout kraanv1.RolloutStatus, members []fleet.Member) error {
	sc.fleet = &fleetPass{members: len(members), message: rollout.Message}
	var unreachable []string
	inProgress := false
	for _, e := range sc.layer.Status.Clusters {
		switch {
		case fleet.Deployed(e, fleet.Target{Version: rollout.Version, Revision: rollout.Revision}):
			sc.fleet.deployed++
		case e.State == kraanv1.UnreachableState:
			unreachable = append(unreachable, e.Cluster)
		case e.State != kraanv1.WaitingState:
			inProgress = true
		}
	}
	poll := sc.interval
	if inProgress {
		poll = healthPollInterval
	}
	switch {
	case len(members) == 0:
		return waitingIn(kraanv1.ApplyPendingState, kraanv1.ReasonNoClusters, sc.interval,
			"spec.placement.clusterSelector chooses no registered cluster (FleetClusters and Cluster API Clusters in the platform's namespaces)")
	case rollout.Phase == kraanv1.RolloutHalted:
		return waitingIn(kraanv1.FailedState, kraanv1.ReasonRolloutHalted, poll, "rollout halted: "+rollout.Message)
	case rollout.Phase == kraanv1.RolloutRolledBack:
		return waitingIn(kraanv1.FailedState, kraanv1.ReasonRolledBack, sc.interval, "rolled back: "+rollout.Message)
	case len(unreachable) > 0:
		return waitingIn(kraanv1.FailedState, kraanv1.ReasonClusterUnreachable, min(poll, unreachableRetry),
			fmt.Sprintf("%s; unreachable: %s", rollout.Message, strings.Join(unreachable, ", ")))
	case rollout.Phase != kraanv1.RolloutComplete:
		return waitingIn(kraanv1.ApplyingState, kraanv1.ReasonProgressing, healthPollInterval,
			fmt.Sprintf("AddonsLayer is being rolled out, wave %s: %s", rollout.Wave, rollout.Message))
	}
	return nil
}

// reconcileUnplaced lets go of the clusters of a layer whose placement was
// removed: the layer applies to the operator's own cluster from now on, and
// its objects stay on the clusters it was placed on (pruning a fleet because
// a field was deleted would be the wrong surprise).
func (r *Reconciler) reconcileUnplaced(_ context.Context, sc *layerScope) (ctrl.Result, error) {
	if len(sc.layer.Status.Clusters) == 0 && sc.layer.Status.Rollout == nil {
		return ctrl.Result{}, nil
	}
	r.Events.Warning(sc.layer, "PlacementRemoved", fmt.Sprintf(
		"spec.placement was removed: the layer's objects stay on the %d clusters it was placed on; it now applies to this cluster",
		len(sc.layer.Status.Clusters)))
	sc.layer.Status.Clusters, sc.layer.Status.Rollout = nil, nil
	return ctrl.Result{}, nil
}

// reconcileDeletePlaced withdraws a deleted placed layer from every cluster
// it is on (see withdrawFrom), then removes the finalizer. A cluster that
// does not answer is not waited for: its objects stay, and an event says so.
func (r *Reconciler) reconcileDeletePlaced(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(sc.layer, kraanv1.Finalizer) {
		return ctrl.Result{}, waitingIn(kraanv1.PruningState, kraanv1.ReasonDeleting, 0, "AddonsLayer is being deleted")
	}
	_, kindRemoved, err := kit.KindBeingRemoved(ctx, r.APIReader, addonsLayersResource)
	if err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonPruneFailed, err)
	}
	var pending []kraanv1.LayerClusterStatus
	if !kindRemoved {
		registered, err := r.Fleet.Registered(ctx)
		if err != nil {
			return ctrl.Result{}, failed(kraanv1.ReasonPruneFailed, err)
		}
		versions := map[fleet.Target]fleet.Version{}
		if err := r.loadVersions(ctx, sc, versions, allClusterVersions(sc.layer.Status.Clusters)); err != nil {
			return ctrl.Result{}, failed(kraanv1.ReasonPruneFailed, err)
		}
		for _, e := range r.withdraw(ctx, sc, registered, nil, versions) {
			if e.State == kraanv1.UnreachableState {
				r.Events.Warning(sc.layer, kraanv1.ReasonClusterUnreachable, fmt.Sprintf(
					"cluster %s did not answer: the layer's objects on it were left in place: %s", e.Cluster, e.Message))
				continue
			}
			pending = append(pending, e)
		}
	}
	if len(pending) > 0 {
		sc.layer.Status.Clusters = pending
		return ctrl.Result{}, waitingIn(kraanv1.PruningState, kraanv1.ReasonDeleting, healthPollInterval,
			fmt.Sprintf("AddonsLayer is being deleted: its objects are being pruned on %d clusters", len(pending)))
	}
	if err := r.removeFinalizer(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, waitingIn(kraanv1.PruningState, kraanv1.ReasonDeleting, 0, "AddonsLayer deleted from its clusters")
}
