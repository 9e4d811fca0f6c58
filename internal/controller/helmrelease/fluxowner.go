package helmrelease

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// awaitFluxHandover keeps a release with one owner: while a Flux
// helm-controller HelmRelease that is not suspended (or is being deleted,
// which uninstalls) manages the same Helm release, the operator does not
// act on it and says which object to suspend — as a Kraan layer awaits its
// take-over. Flux's HelmReleases are read when a Helm action is due only,
// uncached, from the HelmRelease's own namespace (where a migrated one's
// Flux twin lives) and the release's storage namespace (where Flux keeps
// the records of a HelmRelease of that namespace). On a cluster without
// Flux's CRD each read is a discovery request of the missing group, so its
// absence is remembered for kit.OptionalWatchInterval: at most one such
// request per interval for the whole process, not two per Helm action (the
// bench of 2026-12-06 counted 1985 for 1000 releases). Remote clusters are
// not checked: their Flux is not this cluster's.
func (r *Reconciler) awaitFluxHandover(ctx context.Context, namespace string, target helm.Target) error {
	if target.Cluster != nil {
		return nil
	}
	if at := r.fluxKindMissing.Load(); at != 0 && time.Since(time.Unix(0, at)) < kit.OptionalWatchInterval {
		return nil // no Flux here, seen a moment ago
	}
	namespaces := []string{namespace}
	if target.StorageNamespace != namespace {
		namespaces = append(namespaces, target.StorageNamespace)
	}
	var items []unstructured.Unstructured
	for _, ns := range namespaces {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(releasespec.FluxHelmReleaseGroupVersion)
		list.SetKind(releasespec.FluxHelmReleases)
		err := r.APIReader.List(ctx, list, client.InNamespace(ns))
		switch {
		case apimeta.IsNoMatchError(err), apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
			r.fluxKindMissing.Store(time.Now().UnixNano())
			return nil // no Flux here
		case err != nil:
			// Unknown is not "Flux manages it": the operator's own checks
			// (records, ownership) still hold.
			ctrl.LoggerFrom(ctx).V(1).Info("Cannot tell whether Flux manages the release", "error", err.Error())
			return nil
		}
		items = append(items, list.Items...)
	}
	r.fluxKindMissing.Store(0)
	for i := range items {
		flux := &items[i]
		name, storage, active := releasespec.FluxRelease(flux)
		if active && name == target.ReleaseName && storage == target.StorageNamespace {
			return outcome.Waiting(kraanv1.ReasonManagedByFlux, r.DependencyRequeue, fmt.Errorf(
				"the Helm release %s/%s is managed by Flux HelmRelease %s/%s, which is not suspended: the operator waits, so that "+
					"the release has one owner; suspend it (flux suspend helmrelease -n %s %s), or delete it once suspended",
				storage, name, flux.GetNamespace(), flux.GetName(), flux.GetNamespace(), flux.GetName()))
		}
	}
	return nil
}
