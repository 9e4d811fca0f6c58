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
}

// NewPatcher returns a patcher whose base is obj as it is now.
func NewPatcher(c client.Client, obj client.Object) *Patcher {
	return &Patcher{client: c, base: obj.DeepCopyObject().(client.Object)}
}

// Rebase makes obj as it is now the base of the next patch: after a write of
// the object's metadata (a finalizer), so the status patch does not undo it.
func (p *Patcher) Rebase(obj client.Object) { p.base = obj.DeepCopyObject().(client.Object) }

// Patch writes obj's status. An object deleted meanwhile, or a reconcile
// cancelled by shutdown, is not an error: there is nothing left to report to.
func (p *Patcher) Patch(ctx context.Context, obj client.Object) error {
	err := p.client.Status().Patch(ctx, obj, client.MergeFrom(p.base))
	switch {
	case apierrors.IsNotFound(err), err != nil && errors.Is(err, context.Canceled):
		return nil
	case err != nil:
		return fmt.Errorf("patching status: %w", err)
	}
	p.Rebase(obj)
	return nil
}
