package addonslayer

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/layerspec"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// sourceKey names a layer's source, "GitRepository/flux-system/addons"; it is
// the value of the source field index.
func (r *Reconciler) sourceKey(obj *kraanv1.AddonsLayer) string {
	return layerspec.SourceKey(obj, r.Options.DefaultSourceNamespace)
}

// observeSource reads a layer's source with reader (see layerspec.ObserveSource).
func (r *Reconciler) observeSource(ctx context.Context, reader client.Reader, obj *kraanv1.AddonsLayer) (layerspec.Observation, error) {
	return layerspec.ObserveSource(ctx, reader, obj, r.Options.DefaultSourceNamespace)
}

// reconcileSource waits for the source's artifact, fetches it into the store
// (verified, extracted, kept by digest; one download serves every layer on the
// same revision) and finds the layer's directory in it.
func (r *Reconciler) reconcileSource(ctx context.Context, sc *layerScope) (ctrl.Result, error) {
	loc, err := layerspec.Locate(ctx, r.Client, r.Store, sc.layer, r.Options.DefaultSourceNamespace)
	if err != nil {
		return ctrl.Result{}, sc.failCondition(kraanv1.SourceReadyCondition, sourceError(sc, err))
	}
	sc.warnings = append(sc.warnings, loc.Warnings...)
	sc.revision, sc.root, sc.dir = loc.Revision, loc.Root, loc.Dir
	setLayerCondition(sc.layer, kraanv1.SourceReadyCondition, true, kraanv1.ReasonArtifactFetched, "fetched revision "+loc.Revision)
	return ctrl.Result{}, nil
}

// sourceError is how a failure to locate the layer's directory ends the
// reconcile. A source without an artifact yet is waited for; an artifact
// that cannot be used as it is (see layerspec.FetchError.Unusable) or lacks
// the layer's path stalls the layer until its source publishes another one
// (which the source watch reports); another failed download is tried again
// each interval; a failed read backs off.
func sourceError(sc *layerScope, err error) error {
	var notReady *layerspec.NotReadyError
	var fetch *layerspec.FetchError
	var store *layerspec.StoreError
	var path *layerspec.PathError
	interval := sc.interval
	switch {
	case meta.IsNoMatchError(err):
		return waitingIn(kraanv1.PendingState, kraanv1.ReasonSourceKindNotInstalled, kit.OptionalWatchInterval,
			fmt.Sprintf("%v: the cluster has no CRD for it; %s provides it, and the layer goes on once it is installed",
				err, releasespec.FluxSourceProvider))
	case errors.As(err, &notReady):
		return waitingIn(kraanv1.PendingState, kraanv1.ReasonSourceNotReady, interval, notReady.Message)
	case errors.As(err, &fetch) && fetch.Unusable():
		return stalledFailure(kraanv1.ReasonArtifactFailed, fetch.Error())
	case errors.As(err, &fetch):
		return waitingIn(kraanv1.FailedState, kraanv1.ReasonArtifactFailed, interval, fetch.Error())
	case errors.As(err, &store):
		return failed(kraanv1.ReasonArtifactFailed, store)
	case errors.As(err, &path):
		return stalledFailure(kraanv1.ReasonPathNotFound, path.Message)
	}
	return failed(kraanv1.ReasonSourceNotReady, err)
}
