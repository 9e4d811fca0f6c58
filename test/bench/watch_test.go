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

// objects are the objects a watch has seen, by namespace/name.
type objects map[string]client.Object

// watchUntil lists and watches the objects of list's kind (item is one of them) in namespace ns
// ("" for all) and returns the moment done first holds over all of them,
// as seen from watch events: no polling interval adds to what is measured.
// onEvent, when not nil, sees every event first, at the time it arrives.
func watchUntil(ctx context.Context, c client.WithWatch, list client.ObjectList, item client.Object, ns string,
	onEvent func(watch.EventType, client.Object), done func(objects) bool) (time.Time, error) {
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
	seen := objects{}
	var at time.Time
	holds := func() bool {
		if done(seen) {
			at = time.Now()
			return true
		}
		return false
	}
	_, err := toolswatch.UntilWithSync(ctx, lw, item, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if obj, ok := o.(client.Object); ok {
				seen[client.ObjectKeyFromObject(obj).String()] = obj
			}
		}
		return holds(), nil
	}, func(ev watch.Event) (bool, error) {
		obj, ok := ev.Object.(client.Object)
		if !ok {
			return false, nil
		}
		if onEvent != nil {
			onEvent(ev.Type, obj)
		}
		if ev.Type == watch.Deleted {
			delete(seen, client.ObjectKeyFromObject(obj).String())
		} else {
			seen[client.ObjectKeyFromObject(obj).String()] = obj
		}
		return holds(), nil
	})
	return at, err
}
