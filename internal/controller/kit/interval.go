package kit

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultMinReconcileInterval is --min-reconcile-interval's default: the
// shortest period an object may ask to be reconciled at. Each periodic
// reconcile of a HelmRelease or chart-backed object may be a Helm run; one
// asking for a millisecond was reconciled 614 times in 20 s.
const DefaultMinReconcileInterval = 30 * time.Second

// maxToldFloors bounds the objects IntervalFloor remembers having logged.
const maxToldFloors = 4096

// IntervalFloor raises the periods objects ask to be reconciled at (a
// HelmRelease's spec.interval, a chart-backed object's reconcile-period
// annotation) to the operator's minimum, so that whoever may edit one
// object cannot make the operator run Helm for it without pause. It says
// so in the log once per object, field and asked period, not at every
// reconcile. The zero IntervalFloor, and a nil one, raise nothing.
type IntervalFloor struct {
	// Min is the shortest period; zero or less keeps every period as asked.
	Min time.Duration

	mu   sync.Mutex
	told map[toldFloor]struct{}
}

type toldFloor struct {
	uid   types.UID
	field string
	asked time.Duration
}

// NewIntervalFloor returns a floor of min (--min-reconcile-interval).
func NewIntervalFloor(minimum time.Duration) *IntervalFloor {
	return &IntervalFloor{Min: minimum}
}

// Apply returns the period obj asks for in field, raised to Min. Zero, no
// periodic reconcile, stays zero.
func (f *IntervalFloor) Apply(ctx context.Context, obj client.Object, field string, asked time.Duration) time.Duration {
	if f == nil || asked <= 0 || asked >= f.Min {
		return asked
	}
	if f.firstTime(toldFloor{uid: obj.GetUID(), field: field, asked: asked}) {
		ctrl.LoggerFrom(ctx).Info("Reconcile period raised to the operator's minimum (--min-reconcile-interval)",
			"field", field, "asked", asked.String(), "used", f.Min.String())
	}
	return f.Min
}

// firstTime records key and reports whether it is new. The record is
// forgotten whole when it is full: an object then logs once more.
func (f *IntervalFloor) firstTime(key toldFloor) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, seen := f.told[key]; seen {
		return false
	}
	if f.told == nil || len(f.told) >= maxToldFloors {
		f.told = map[toldFloor]struct{}{}
	}
	f.told[key] = struct{}{}
	return true
}
