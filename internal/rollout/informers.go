package rollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// listen registers w for the objects' changes, starting the informers it
// needs and waiting for them to sync.
func (t *Tracker) listen(ctx context.Context, w *waiter, todo []*pending) error {
	// Before t.mu: the first wait on a resource may ask the API server
	// whether it may list it cluster-wide, and events wait on t.mu.
	keys := make([]informerKey, len(todo))
	for i, p := range todo {
		keys[i] = t.keyOf(ctx, p.Object)
		keys[i].whole = p.check != nil
	}
	used := map[*kind]bool{}
	t.mu.Lock()
	for i, p := range todo {
		key := keys[i]
		k := t.kinds[key]
		if k == nil {
			k = t.start(key)
			t.kinds[key] = k
		}
		if !used[k] {
			used[k] = true
			k.users++
			if k.idle != nil {
				k.idle.Stop()
				k.idle = nil
			}
		}
		p.informer = k
		if k.waiters[p.key()] == nil {
			k.waiters[p.key()] = map[*waiter]struct{}{}
		}
		k.waiters[p.key()][w] = struct{}{}
	}
	t.mu.Unlock()
	for k := range used {
		if !cache.WaitForCacheSync(ctx.Done(), k.informer.HasSynced) {
			return fmt.Errorf("watching %s: %w", k.key.resource.Resource, errors.Join(ctx.Err(), errors.New("the informer did not sync")))
		}
	}
	return nil
}

// keyOf is the informer for o: cluster-wide, unless the operator may not
// list o's resource cluster-wide (it has Roles in some namespaces only), which
// one LIST of a single item tells the first time.
func (t *Tracker) keyOf(ctx context.Context, o Object) informerKey {
	if o.Namespace == "" {
		return informerKey{resource: o.Resource}
	}
	t.namespacedMu.Lock()
	defer t.namespacedMu.Unlock()
	namespaced, known := t.namespaced[o.Resource]
	if !known {
		_, err := t.client.Resource(o.Resource).List(ctx, metav1.ListOptions{Limit: 1})
		namespaced = apierrors.IsForbidden(err)
		if err == nil || namespaced {
			t.namespaced[o.Resource] = namespaced
		}
	}
	if namespaced {
		return informerKey{resource: o.Resource, namespace: o.Namespace}
	}
	return informerKey{resource: o.Resource}
}

// unlisten undoes listen; an informer nobody waits on stops after t.idle.
func (t *Tracker) unlisten(w *waiter, todo []*pending) {
	t.mu.Lock()
	defer t.mu.Unlock()
	done := map[*kind]bool{}
	for _, p := range todo {
		k := p.informer
		if k == nil {
			continue
		}
		delete(k.waiters[p.key()], w)
		if len(k.waiters[p.key()]) == 0 {
			delete(k.waiters, p.key())
		}
		if done[k] {
			continue
		}
		done[k] = true
		if k.users--; k.users > 0 {
			continue
		}
		if t.closed {
			t.stopLocked(k)
			continue
		}
		k.idle = time.AfterFunc(t.idle, func() { t.stopIdle(k) })
	}
}

// Close stops every informer nobody waits on now, and each of the others
// when its last wait ends: the tracker's cluster is no longer used (its
// kubeconfig changed, or its clients were evicted). A wait that starts after
// Close still works, and its informers stop when it ends. Close returns at
// once; it does not wait for the informers' goroutines to end.
func (t *Tracker) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, k := range t.kinds {
		if k.users == 0 {
			t.stopLocked(k)
		}
	}
}

// Informers is how many informers are running, for tests.
func (t *Tracker) Informers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.kinds)
}

func (t *Tracker) stopIdle(k *kind) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k.users > 0 || t.kinds[k.key] != k {
		return
	}
	t.stopLocked(k)
}

// stopLocked stops k's informer and forgets it; t.mu is held.
func (t *Tracker) stopLocked(k *kind) {
	if k.idle != nil {
		k.idle.Stop()
		k.idle = nil
	}
	k.stop()
	if t.kinds[k.key] == k {
		delete(t.kinds, k.key)
	}
}

// start runs the informer of key over Helm's objects; t.mu is held.
func (t *Tracker) start(key informerKey) *kind {
	informer := dynamicinformer.NewFilteredDynamicInformer(t.client, key.resource, key.namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = ManagedByLabel + "=" + ManagedByHelm }).Informer()
	if key.whole {
		_ = informer.SetTransform(withoutManagedFields)
	} else {
		_ = informer.SetTransform(slim)
	}
	k := &kind{key: key, informer: informer, waiters: map[string]map[*waiter]struct{}{}}
	notify := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		for w := range k.waiters[key] {
			w.notify()
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	})
	ctx, cancel := context.WithCancel(context.Background())
	k.stop = cancel
	go informer.RunWithContext(ctx)
	return k
}

// withoutManagedFields drops an object's managed fields, often its bulk,
// which no health check reads.
func withoutManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}

// slim keeps of an object what kstatus reads: its identity and generation,
// the scalar fields of its spec (replicas, type, clusterIP…) and its update
// strategy, and its status. Pod templates, selectors and schemas, the bulk of
// a workload or a CRD, are dropped: thousands of them are cached at once.
func slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	meta := map[string]any{"name": u.GetName(), "resourceVersion": u.GetResourceVersion(), "generation": u.GetGeneration(),
		"uid": string(u.GetUID())}
	if ns := u.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	if ts := u.GetDeletionTimestamp(); ts != nil {
		meta["deletionTimestamp"] = ts.UTC().Format(time.RFC3339)
	}
	out := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta}
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		kept := map[string]any{}
		for k, v := range spec {
			switch v.(type) {
			case map[string]any, []any:
				if k == "updateStrategy" {
					kept[k] = v
				}
			default:
				kept[k] = v
			}
		}
		out["spec"] = kept
	}
	if status, ok := u.Object["status"]; ok {
		out["status"] = status
	}
	return &unstructured.Unstructured{Object: out}, nil
}
