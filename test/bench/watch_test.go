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
)

// watchCount lists and watches the objects of list's kind (item is one of
// them) in namespace ns ("" for all) and returns the moment want of them
// first satisfy ok, as seen from watch events: no polling interval adds to
// what is measured. ok is evaluated once per event, for the object of the
// event only, so that watching thousands of objects stays cheap beside what
// it measures. onEvent, when not nil, sees every event first, as it arrives.
func watchCount(ctx context.Context, c client.WithWatch, list client.ObjectList, item client.Object, ns string,
	onEvent func(watch.EventType, client.Object), ok func(client.Object) bool, want int) (time.Time, error) {
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
	set := func(obj client.Object, v bool) bool {
		key := client.ObjectKeyFromObject(obj).String()
		if v {
			satisfied[key] = true
		} else {
			delete(satisfied, key)
		}
		if len(satisfied) == want {
			at = time.Now()
			return true
		}
		return false
	}
	_, err := toolswatch.UntilWithSync(ctx, lw, item, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if obj, isObj := o.(client.Object); isObj && ok(obj) {
				satisfied[client.ObjectKeyFromObject(obj).String()] = true
			}
		}
		if len(satisfied) == want {
			at = time.Now()
			return true, nil
		}
		return false, nil
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
