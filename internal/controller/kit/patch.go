package kit

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher writes an object's status as a merge patch against the status it
// last wrote (or read): one patch at the end of a reconcile, and progress
// patches before long actions, each carrying only what changed since.
type Patcher struct {
	client client.Client
	base   client.Object
	// lock makes a patch fail with a conflict when the object changed since
	// it was read, for status written by two controllers.
	lock bool
}

// NewPatcher returns a patcher whose base is obj as it is now.
func NewPatcher(c client.Client, obj client.Object) *Patcher {
	return &Patcher{client: c, base: obj.DeepCopyObject().(client.Object)}
}

// NewLockingPatcher is NewPatcher for status that two controllers write (a
// chart-backed kind and its Go half): a merge patch replaces the whole
// conditions list, so a patch made from a stale read would drop the other
// controller's conditions; with the lock it fails with a conflict instead,
// and the write is retried on a fresh read.
func NewLockingPatcher(c client.Client, obj client.Object) *Patcher {
	p := NewPatcher(c, obj)
	p.lock = true
	return p
}

// Rebase makes obj as it is now the base of the next patch: after a write of
// the object's metadata (a finalizer), so the status patch does not undo it.
func (p *Patcher) Rebase(obj client.Object) { p.base = obj.DeepCopyObject().(client.Object) }

// Fork returns a patcher with the same base, for a writer that goes on
// with its own copy of the object.
func (p *Patcher) Fork() *Patcher {
	return &Patcher{client: p.client, base: p.base.DeepCopyObject().(client.Object), lock: p.lock}
}

// Patch writes obj's status. An object deleted meanwhile, or a reconcile
// cancelled by shutdown, is not an error: there is nothing left to report to.
func (p *Patcher) Patch(ctx context.Context, obj client.Object) error {
	_, err := p.Write(ctx, obj)
	return err
}

// Write is Patch, saying whether a request was sent: nothing is when the
// status is unchanged.
func (p *Patcher) Write(ctx context.Context, obj client.Object) (sent bool, err error) {
	if data, err := client.MergeFrom(p.base).Data(obj); err == nil && string(data) == "{}" {
		// Nothing changed: an idle resync writes nothing.
		return false, nil
	}
	patch := client.MergeFrom(p.base)
	if p.lock {
		patch = client.MergeFromWithOptions(p.base, client.MergeFromWithOptimisticLock{})
	}
	err = p.client.Status().Patch(ctx, obj, patch)
	switch {
	case apierrors.IsNotFound(err), err != nil && errors.Is(err, context.Canceled):
		return true, nil
	case err != nil:
		return true, fmt.Errorf("patching status: %w", err)
	}
	p.Rebase(obj)
	return true, nil
}
