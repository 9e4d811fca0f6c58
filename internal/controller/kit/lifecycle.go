package kit

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// EnsureFinalizer adds finalizer to obj unless it has it. The patcher is
// rebased after the write, so the status patch that follows does not undo it.
func EnsureFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string, patcher *Patcher) error {
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, finalizer)
	if err := c.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("adding the finalizer: %w", err)
	}
	patcher.Rebase(obj)
	return nil
}

// Every is a manager runnable that calls fn every interval until the manager
// stops; like every runnable that does not say otherwise, it runs on the
// leader only.
func Every(interval time.Duration, fn func(context.Context)) manager.RunnableFunc {
	return func(ctx context.Context) error {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.C:
				fn(ctx)
			}
		}
	}
}
