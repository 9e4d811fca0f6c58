package kit

import (
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// ResultOf turns a step's error into what controller-runtime is told: a
// terminal error is not retried (a watch brings the object back when
// something changes; its Resync, if any, is a plain look again), a wait
// requeues after its delay, anything else is returned for back-off. The
// classes are outcome's, decided where the failure happened.
func ResultOf(err error) (ctrl.Result, error) {
	if err == nil {
		return ctrl.Result{}, nil
	}
	switch outcome.Classify(err) {
	case outcome.ClassTerminal:
		var terminal *outcome.TerminalError
		if errors.As(err, &terminal) {
			return ctrl.Result{RequeueAfter: terminal.Resync}, nil
		}
		return ctrl.Result{}, nil
	case outcome.ClassWaiting:
		var waiting *outcome.WaitingError
		if errors.As(err, &waiting) {
			return ctrl.Result{RequeueAfter: waiting.RequeueAfter}, nil
		}
		return ctrl.Result{}, nil
	default:
		return ctrl.Result{}, err
	}
}
