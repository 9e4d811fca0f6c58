package addonslayer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/layer"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// suspendedByHoldAnnotation marks HelmReleases that hold suspended, so unhold
// resumes only those (Kraan's annotation, kept verbatim).
const suspendedByHoldAnnotation = "kraan/suspended-by-hold"

// reconcileHold stops a held layer here, suspending its HelmReleases so their
// own triggers (a changed values ConfigMap) cannot upgrade them either (Kraan
// #462). Without hold, the releases hold suspended are resumed.
func (r *Reconciler) reconcileHold(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	n, err := r.setHeldReleasesSuspended(ctx, sc.layer, sc.layer.Spec.Hold)
	if err != nil {
		return ctrl.Result{}, failed(kraanv1.ReasonReconcileError, err)
	}
	if !sc.layer.Spec.Hold {
		if n > 0 {
			r.event(sc, "Resumed", "Resumed %d HelmRelease(s) suspended by hold", n)
		}
		return ctrl.Result{}, nil
	}
	if n > 0 {
		r.event(sc, "Suspended", "Suspended %d HelmRelease(s) due to hold", n)
	}
	return ctrl.Result{}, waitingIn(kraanv1.HoldState, kraanv1.ReasonOnHold, 0, "AddonsLayer is on hold, preventing execution")
}

// setHeldReleasesSuspended suspends (hold) or resumes (unhold) the layer's
// HelmReleases and returns how many it changed. Resuming touches only those
// hold suspended; a release suspended in the source stays suspended. A
// release is the layer's when it carries the layer's label and the layer's
// inventory lists it: the label alone is anyone's to set, and would let a
// tenant have the operator suspend or resume a release of its choosing.
func (r *Reconciler) setHeldReleasesSuspended(ctx context.Context, layer *kraanv1.AddonsLayer, hold bool) (int, error) {
	list := &kraanv1.HelmReleaseList{}
	if err := r.List(ctx, list, client.MatchingLabels{manifest.LayerLabel: layer.Name}); err != nil {
		return 0, fmt.Errorf("listing the layer's HelmReleases: %w", err)
	}
	changed := 0
	for i := range list.Items {
		hr := &list.Items[i]
		byHold := hr.Annotations[suspendedByHoldAnnotation] == "true"
		if hold == byHold || (hold && hr.Spec.Suspend) || !inventoryLists(layer, hr) {
			continue
		}
		if err := r.patchSuspend(ctx, hr, hold); err != nil {
			return changed, err
		}
		changed++
	}
	return changed, nil
}

// inventoryLists says whether the layer's inventory lists hr.
func inventoryLists(layer *kraanv1.AddonsLayer, hr *kraanv1.HelmRelease) bool {
	ref := apply.Ref{APIVersion: kraanv1.GroupVersion.String(), Kind: "HelmRelease", Namespace: hr.Namespace, Name: hr.Name}
	return apply.Lists(layer.Status.Resources, ref)
}

func (r *Reconciler) patchSuspend(ctx context.Context, hr *kraanv1.HelmRelease, hold bool) error {
	var mark any // nil removes the annotation
	if hold {
		mark = "true"
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{suspendedByHoldAnnotation: mark}},
		"spec":     map[string]any{"suspend": hold},
	})
	if err != nil {
		return err
	}
	if err := r.Patch(ctx, hr, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("setting suspend=%t on HelmRelease %s/%s: %w", hold, hr.Namespace, hr.Name, err)
	}
	return nil
}

// reconcilePrerequisites checks, in order: the API server version, that the
// layer is in no dependency cycle, and that every layer it depends on is
// Deployed at the required version and its source's current revision. The
// dependencies are read fresh from the API server; a dependent is woken by
// the watch on layers when a dependency changes, not by polling.
func (r *Reconciler) reconcilePrerequisites(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	err := r.checkK8sVersion(sc)
	if err == nil {
		err = r.checkCycle(ctx, sc)
	}
	if err == nil {
		err = r.checkDependencies(ctx, sc)
	}
	if err != nil {
		return ctrl.Result{}, sc.failCondition(kraanv1.PrerequisitesMetCondition, err)
	}
	setLayerCondition(sc.layer, kraanv1.PrerequisitesMetCondition, true, kraanv1.ReasonPrerequisitesMet, "prerequisites are met")
	return ctrl.Result{}, nil
}

func (r *Reconciler) checkK8sVersion(sc *layerScope) error {
	if sc.layer.Spec.Prereqs.K8sVersion == "" {
		return nil
	}
	v, err := sc.discovery.ServerVersion()
	if err != nil {
		return waitingIn(kraanv1.K8sVersionState, kraanv1.ReasonK8sVersionNotMet, sc.interval,
			"failed to obtain cluster api server version, "+err.Error())
	}
	met, msg := layer.CheckK8sVersion(v.GitVersion, sc.layer.Spec.Prereqs.K8sVersion)
	if met {
		return nil
	}
	// The server does not upgrade itself under us often: check again each interval.
	return waitingIn(kraanv1.K8sVersionState, kraanv1.ReasonK8sVersionNotMet, sc.interval, msg)
}

// checkCycle builds the graph of every layer's dependsOn; a cycle is a
// configuration error no wait can fix.
func (r *Reconciler) checkCycle(ctx context.Context, sc *layerScope) error {
	if len(sc.layer.Spec.Prereqs.DependsOn) == 0 {
		return nil
	}
	list := &kraanv1.AddonsLayerList{}
	if err := r.List(ctx, list); err != nil {
		return failed(kraanv1.ReasonReconcileError, fmt.Errorf("listing layers: %w", err))
	}
	nodes := make([]layer.Node, 0, len(list.Items)+1)
	for _, l := range list.Items {
		if l.Name != sc.layer.Name { // our own spec is the fresh one
			nodes = append(nodes, layer.Node{Name: l.Name, DependsOn: l.Spec.Prereqs.DependsOn})
		}
	}
	nodes = append(nodes, layer.Node{Name: sc.layer.Name, DependsOn: sc.layer.Spec.Prereqs.DependsOn})
	if cycle := layer.NewGraph(nodes).CycleOf(sc.layer.Name); cycle != nil {
		return stalledFailure(kraanv1.ReasonDependencyCycle, layer.CycleMessage(cycle))
	}
	return nil
}

func (r *Reconciler) checkDependencies(ctx context.Context, sc *layerScope) error {
	deps, err := layer.ParseDependencies(sc.layer.Spec.Prereqs.DependsOn)
	if err != nil {
		return stalledFailure(kraanv1.ReasonInvalidDependency, err.Error())
	}
	var lookupErr error
	met, msg := layer.CheckDependencies(deps, func(name string) *layer.DependencyState {
		st, err := r.dependencyState(ctx, name, sc.cluster)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		return st
	})
	switch {
	case lookupErr != nil:
		return failed(kraanv1.ReasonReconcileError, lookupErr)
	case !met:
		// No requeue: the dependency's status change wakes this layer (watch).
		// The interval is a safety net for a missed event.
		return waitingIn(kraanv1.ApplyPendingState, kraanv1.ReasonDependencyNotReady, sc.interval, msg)
	}
	return nil
}

// dependencyState reads a dependency layer and its source from the API
// server; on a registered cluster (cluster not empty), what the layer has
// deployed there.
func (r *Reconciler) dependencyState(ctx context.Context, name, cluster string) (*layer.DependencyState, error) {
	dep := &kraanv1.AddonsLayer{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading layer %s: %w", name, err)
	}
	st := dependencyStateOf(dep)
	if cluster != "" {
		st = dependencyStateOn(dep, cluster)
	}
	obs, err := r.observeSource(ctx, r.APIReader, dep)
	if err != nil {
		return nil, err
	}
	if obs.Artifact != nil {
		st.SourceRevision = obs.Artifact.Revision
	}
	return &st, nil
}

// dependencyStateOf is what a dependent reads of the layer dep, but for its
// source's revision.
func dependencyStateOf(dep *kraanv1.AddonsLayer) layer.DependencyState {
	st := layer.DependencyState{
		Exists: true, SpecVersion: dep.Spec.Version, Generation: dep.Generation,
		ObservedGeneration: dep.Status.ObservedGeneration, Version: dep.Status.Version,
		State: dep.Status.State, Revision: dep.Status.Revision, AwaitsTakeOver: dep.AwaitsTakeOver(),
	}
	if c := apimeta.FindStatusCondition(dep.Status.Conditions, kraanv1.DeployedCondition); c != nil {
		st.Deployed = c.Status
	}
	return st
}

// dependencyStateOn is what a dependent on cluster reads of the placed layer
// dep: the version dep last deployed there. A cluster still waiting for its
// wave keeps what it deployed: dependents there need not wait for the wave.
func dependencyStateOn(dep *kraanv1.AddonsLayer, cluster string) layer.DependencyState {
	st := layer.DependencyState{Exists: true, SpecVersion: dep.Spec.Version, AwaitsTakeOver: dep.AwaitsTakeOver()}
	i := slices.IndexFunc(dep.Status.Clusters, func(e kraanv1.LayerClusterStatus) bool { return e.Cluster == cluster })
	if i < 0 {
		st.State = "not placed on cluster " + cluster
		return st
	}
	e := dep.Status.Clusters[i]
	st.Version, st.Revision, st.State = e.DeployedVersion, e.DeployedRevision, e.State
	if e.DeployedVersion != "" && (e.State == kraanv1.DeployedState || e.State == kraanv1.WaitingState) {
		st.State, st.Deployed = kraanv1.DeployedState, metav1.ConditionTrue
	}
	return st
}
