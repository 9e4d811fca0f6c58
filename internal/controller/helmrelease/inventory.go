package helmrelease

import (
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// Helm's statuses of a release whose objects are deleted or being deleted.
const (
	statusUninstalled  = "uninstalled"
	statusUninstalling = "uninstalling"
)

// hookAnnotation marks a Helm hook: hooks run around actions and are not
// part of what a release keeps applied.
const hookAnnotation = "helm.sh/hook"

// recordInventory sets status.inventory, as Flux does, to the objects the
// newest revision applied: its manifest and, for a revision made from the
// desired chart, the chart's CRDs. An uninstalled or absent release has no
// entries. When the inventory cannot be worked out the one reported stays,
// with a Warning event: it is a report, not a reason to fail the release.
func (r *Reconciler) recordInventory(hr *kraanv1.HelmRelease, target helm.Target, latest *helm.Revision, desired helm.Desired) {
	if latest == nil || latest.Status == statusUninstalled || latest.Status == statusUninstalling {
		hr.Status.Inventory = &kraanv1.ResourceInventory{Entries: []kraanv1.ResourceRef{}}
		return
	}
	objs, err := r.Engine.ReleaseObjects(target, latest.Manifest)
	if err == nil && latest.Matches && desired.Chart != nil {
		var crds []*unstructured.Unstructured
		crds, err = helm.CRDObjects(desired.Chart)
		objs = append(objs, crds...)
	}
	if err != nil {
		r.Events.Warning(hr, kraanv1.ReasonInventoryBuildFailed,
			fmt.Sprintf("Listing the objects of release %s/%s.v%d: %s", latest.Namespace, latest.Name, latest.Version, err))
		return
	}
	hr.Status.Inventory = inventoryOf(objs)
}

// inventoryOf lists objs, hooks left out, as Flux's inventory entries:
// "<namespace>_<name>_<group>_<kind>" (cli-utils' object ID) and the version.
func inventoryOf(objs []*unstructured.Unstructured) *kraanv1.ResourceInventory {
	inv := &kraanv1.ResourceInventory{Entries: make([]kraanv1.ResourceRef, 0, len(objs))}
	for _, obj := range objs {
		if _, hook := obj.GetAnnotations()[hookAnnotation]; hook {
			continue
		}
		inv.Entries = append(inv.Entries, kraanv1.ResourceRef{
			ID:      object.UnstructuredToObjMetadata(obj).String(),
			Version: obj.GroupVersionKind().Version,
		})
	}
	return inv
}
