package kit

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Step is one step of a reconcile. It returns a zero result and no error to
// let the next step run; anything else ends the reconcile with that outcome.
type Step[S any] func(ctx context.Context, scope S) (ctrl.Result, error)

// RunSteps runs steps in order on scope and returns the outcome of the first
// step that halts (a requeue or an error), or a zero result when all of them
// went through.
func RunSteps[S any](ctx context.Context, scope S, steps ...Step[S]) (ctrl.Result, error) {
	for _, step := range steps {
		res, err := step(ctx, scope)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}
