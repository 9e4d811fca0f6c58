// Package outcome is how a failure is to be handled, decided once, where it
// happens: a terminal failure waits for the user, a wait looks again after a
// delay, anything else is retried with back-off. It is a leaf: packages that
// only describe or check specs (releasespec, layerspec, the kubectl plugin)
// classify their failures with it and depend on no controller.
package outcome

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TerminalError is a failure that only a change by the user can fix: a chart
// version that does not exist, values the chart's schema rejects, a request
// RBAC forbids. The object is Stalled and not retried until its spec, a
// referenced object or a reconcile request changes.
type TerminalError struct {
	// Reason is the condition and event reason.
	Reason string
	Err    error
	// Resync, when set, looks at the object again after it though nothing
	// changed: a kind that still resyncs a stalled object on its interval.
	Resync time.Duration
}

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// Terminal marks err as terminal, reported with reason.
func Terminal(reason string, err error) error { return &TerminalError{Reason: reason, Err: err} }

// WaitingError is a wait on something outside the object (a dependency, a
// source without an artifact): no back-off, a look again after RequeueAfter,
// though a watch usually comes first.
type WaitingError struct {
	// Reason is the condition reason.
	Reason       string
	Err          error
	RequeueAfter time.Duration
}

func (e *WaitingError) Error() string { return e.Err.Error() }
func (e *WaitingError) Unwrap() error { return e.Err }

// Waiting says the object waits for what err describes.
func Waiting(reason string, after time.Duration, err error) error {
	return &WaitingError{Reason: reason, Err: err, RequeueAfter: after}
}

// TransientError is a failure that may go away by itself (a network blip, a
// 5xx, a conflict): retried with exponential back-off up to the controller's
// maximum retry delay.
type TransientError struct {
	// Reason is the condition and event reason.
	Reason string
	Err    error
}

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// Transient marks err as transient, reported with reason.
func Transient(reason string, err error) error { return &TransientError{Reason: reason, Err: err} }

// KindRecheckInterval is how often the kinds a cluster does not serve yet
// (Flux's, on a cluster without Flux) are looked for.
const KindRecheckInterval = 10 * time.Second

// KindNotInstalled is the wait of an object whose spec names a kind the
// cluster has no CRD for: it says who provides the kind, and the object is
// looked at again every KindRecheckInterval until the kind is installed.
func KindNotInstalled(reason string, err error, provider string) error {
	return Waiting(reason, KindRecheckInterval, fmt.Errorf("%w: the cluster has no CRD for it; %s provides it, "+
		"and the object goes on once it is installed", err, provider))
}

// Class is how a failure is handled.
type Class int

// The classes of failures.
const (
	// ClassTransient is retried with back-off.
	ClassTransient Class = iota
	// ClassTerminal stalls until something the user controls changes.
	ClassTerminal
	// ClassWaiting looks again after a fixed delay, without back-off.
	ClassWaiting
)

func (c Class) String() string {
	switch c {
	case ClassTerminal:
		return "terminal"
	case ClassWaiting:
		return "waiting"
	default:
		return "transient"
	}
}

// Classified reports whether err already carries a class of this package.
func Classified(err error) bool {
	var terminal *TerminalError
	var waiting *WaitingError
	var transient *TransientError
	return errors.As(err, &terminal) || errors.As(err, &waiting) || errors.As(err, &transient)
}

// Classify decides how err is handled, once, from its type: the typed errors
// of this package first, then the API server's status errors (forbidden,
// invalid and bad requests are the user's to fix; conflicts, timeouts, rate
// limits and server errors pass). Anything unknown is transient: a retry with
// back-off is the safe default for a failure nobody classified.
func Classify(err error) Class {
	var terminal *TerminalError
	var waiting *WaitingError
	var transient *TransientError
	switch {
	case errors.As(err, &waiting):
		return ClassWaiting
	case errors.As(err, &transient):
		return ClassTransient
	case errors.As(err, &terminal):
		return ClassTerminal
	case apierrors.IsForbidden(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return ClassTerminal
	}
	return ClassTransient
}

// ReasonOf is the reason a typed error carries, or fallback.
func ReasonOf(err error, fallback string) string {
	var terminal *TerminalError
	var waiting *WaitingError
	var transient *TransientError
	switch {
	case errors.As(err, &waiting):
		return waiting.Reason
	case errors.As(err, &transient):
		return transient.Reason
	case errors.As(err, &terminal):
		return terminal.Reason
	}
	return fallback
}
