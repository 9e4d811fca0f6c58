package bench

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/bench/report"
)

// watchCount lists and watches the objects of list's kind (item is one of
// them) in namespace ns ("" for all) and returns the moment want of them
// first satisfy ok, as seen from watch events: no polling interval adds to
// what is measured. ok is evaluated once per event, for the object of the
// event only, so that watching thousands of objects stays cheap beside what
// it measures. onEvent, when not nil, sees every event first, as it arrives;
// progress, when not nil, records when the count first reached each
// twentieth of want.
func watchCount(ctx context.Context, c client.WithWatch, list client.ObjectList, item client.Object, ns string,
	onEvent func(watch.EventType, client.Object), progress *curve, ok func(client.Object) bool, want int) (time.Time, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, _ := list.DeepCopyObject().(client.ObjectList)
			return l, c.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &o})
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			l, _ := list.DeepCopyObject().(client.ObjectList)
			return c.Watch(ctx, l, &client.ListOptions{Namespace: ns, Raw: &o})
		},
	}
	satisfied := map[string]bool{}
	var at time.Time
	// reached notes the count, and the moment it is all that is wanted.
	reached := func() bool {
		progress.observe(len(satisfied), want)
		if len(satisfied) == want {
			at = time.Now()
			return true
		}
		return false
	}
	set := func(obj client.Object, v bool) bool {
		key := client.ObjectKeyFromObject(obj).String()
		if v {
			satisfied[key] = true
		} else {
			delete(satisfied, key)
		}
		return reached()
	}
	_, err := toolswatch.UntilWithSync(ctx, lw, item, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if obj, isObj := o.(client.Object); isObj && ok(obj) {
				satisfied[client.ObjectKeyFromObject(obj).String()] = true
			}
		}
		return reached(), nil
	}, func(ev watch.Event) (bool, error) {
		obj, isObj := ev.Object.(client.Object)
		if !isObj {
			return false, nil
		}
		if onEvent != nil {
			onEvent(ev.Type, obj)
		}
		return set(obj, ev.Type != watch.Deleted && ok(obj)), nil
	})
	return at, err
}

// curve records the moments a count first reached 1/report.CurveSteps,
// 2/report.CurveSteps, … of what is waited for: the shape of a wave (a slow
// start, a steady rate, a long tail), which its total time alone does not
// show.
type curve struct {
	at []time.Time
}

// observe notes the moment n of want are done; a nil curve records nothing.
func (c *curve) observe(n, want int) {
	if c == nil || want <= 0 {
		return
	}
	for len(c.at) < report.CurveSteps && n*report.CurveSteps >= (len(c.at)+1)*want {
		c.at = append(c.at, time.Now())
	}
}

// secondsSince is each recorded moment in seconds after start.
func (c *curve) secondsSince(start time.Time) []float64 {
	out := make([]float64, len(c.at))
	for i, t := range c.at {
		out[i] = t.Sub(start).Seconds()
	}
	return out
}
