package kit

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is what one kind brings to the reconcile skeleton (Reconcile): how
// its object is read, the steps of a pass, and how the pass ends. The
// skeleton owns the order, so every kind reads, runs its steps and writes
// its status the same way.
type Kind[S any] interface {
	// Read gets the object and builds the scope of one pass. ok false with
	// no error means there is nothing to do: the object is gone, is not this
	// controller's, or waits for someone else; nothing is written.
	Read(ctx context.Context, req ctrl.Request) (scope S, ok bool, err error)
	// Steps are the pass's steps, in order: the deletion when the object is
	// being deleted, else the finalizer and the kind's own steps.
	Steps(scope S) []Step[S]
	// Finish sets the conditions the kind owns from how the steps ended
	// (the first step's error or requeue, or none), writes the status once
	// with a kit.Patcher, and returns what controller-runtime is told:
	// kit.ResultOf for an error (terminal, waiting or transient, as
	// outcome classed it where it happened).
	Finish(ctx context.Context, scope S, res ctrl.Result, err error) (ctrl.Result, error)
}

// Reconcile is the reconcile of every kind: read, steps, one status write.
// An object that is not found is gone, and not an error.
func Reconcile[S any](ctx context.Context, kind Kind[S], req ctrl.Request) (ctrl.Result, error) {
	scope, ok, err := kind.Read(ctx, req)
	if err != nil || !ok {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	res, err := RunSteps(ctx, scope, kind.Steps(scope)...)
	return kind.Finish(ctx, scope, res, err)
}
