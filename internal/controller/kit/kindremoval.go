package kit

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get

// crdKind is the kind of a CustomResourceDefinition, read as metadata only.
var crdKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// KindBeingRemoved says, with the reason, whether the CRD serving resource
// is being deleted or gone. Deleting a CRD deletes every object of its kind
// (OLM v1 deletes the CRDs it installed when its ClusterExtension is removed,
// and people delete CRDs by mistake); a finalizer that then uninstalled or
// pruned would take every workload with the kind. Such a deletion is not a
// user's decision about one object: finalizers let go and leave what the
// object deployed in place, to be adopted when the kind and its objects come
// back. reader must not be a cache: the CRD's deletion is what decides.
func KindBeingRemoved(ctx context.Context, reader client.Reader, resource schema.GroupResource) (string, bool, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(crdKind)
	err := reader.Get(ctx, client.ObjectKey{Name: resource.String()}, crd)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("CustomResourceDefinition %s is gone", resource), true, nil
	case apierrors.IsForbidden(err):
		// An installation whose role predates this check: the deletion is
		// a user's, as before it.
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading CustomResourceDefinition %s: %w", resource, err)
	case !crd.DeletionTimestamp.IsZero():
		return fmt.Sprintf("CustomResourceDefinition %s is being deleted", resource), true, nil
	}
	return "", false, nil
}

// Orphan removes the owner references to owner from objs, so that the
// garbage collector keeps them once owner is gone (as a deletion with
// propagation Orphan would; a finalizer cannot ask for that once the
// deletion began). An object already gone is skipped. reader must not be a
// cache: the operator's caches drop owner references (SlimMetadata).
func Orphan(ctx context.Context, reader client.Reader, c client.Writer, owner types.UID, objs []client.Object) error {
	for _, obj := range objs {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), meta); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading %s %s: %w", meta.Kind, client.ObjectKeyFromObject(obj), err)
		}
		refs := meta.GetOwnerReferences()
		kept := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool { return ref.UID == owner })
		if len(kept) == len(refs) {
			continue
		}
		base := meta.DeepCopy()
		meta.SetOwnerReferences(kept)
		// Optimistic lock: another owner added meanwhile is not dropped.
		if err := c.Patch(ctx, meta, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("orphaning %s %s: %w", meta.Kind, client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}
