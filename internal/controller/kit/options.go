package kit

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Defaults of the retry delays, Flux's (--min-retry-delay, --max-retry-delay).
const (
	DefaultMinRetryDelay = 750 * time.Millisecond
	DefaultMaxRetryDelay = 15 * time.Minute
)

// ControllerOptions are the settings every controller of the operator is
// built with.
type ControllerOptions struct {
	// MaxConcurrentReconciles is the number of workers per kind.
	MaxConcurrentReconciles int
	// MinRetryDelay and MaxRetryDelay bound the exponential back-off of a
	// transient failure; zero takes the defaults above.
	MinRetryDelay time.Duration
	MaxRetryDelay time.Duration
	// MinReconcileInterval is the shortest period an object may ask to be
	// reconciled at (--min-reconcile-interval, see IntervalFloor); zero
	// keeps every period as asked.
	MinReconcileInterval time.Duration
}

// IntervalFloor returns the floor of the periods objects ask for.
func (o ControllerOptions) IntervalFloor() *IntervalFloor {
	return NewIntervalFloor(o.MinReconcileInterval)
}

// Controller returns controller-runtime's options: the workers, their
// queue (controller-runtime's priority queue, fair between namespaces:
// newFairQueue), and a rate limiter that backs a failing object off
// exponentially, per object, from MinRetryDelay to MaxRetryDelay.
func (o ControllerOptions) Controller() controller.Options {
	minDelay, maxDelay := o.MinRetryDelay, o.MaxRetryDelay
	if minDelay <= 0 {
		minDelay = DefaultMinRetryDelay
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxRetryDelay
	}
	return controller.Options{
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](minDelay, max(minDelay, maxDelay)),
		// controller-runtime's priority queue, shared fairly between
		// namespaces (issue #42).
		NewQueue: newFairQueue(ctrllog.Log.WithName("queue")),
	}
}
