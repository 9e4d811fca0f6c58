package helm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// errHookTimeout and errDeleteTimeout end a hook or delete wait at its
// timeout, in Helm's words.
var (
	errHookTimeout   = errors.New("timed out waiting for the condition")
	errDeleteTimeout = errors.New("timed out waiting for the resources to be deleted")
)

// isHook says whether info is a hook: its manifest carries Helm's hook
// annotation. A release's manifest never does (Helm moves those to hooks).
func isHook(info *resource.Info) bool {
	obj, err := meta.Accessor(info.Object)
	if err != nil {
		return false
	}
	_, hook := obj.GetAnnotations()[hookAnnotation]
	return hook
}

// watchHooks waits, one after the other as Helm does, for each hook among
// resources to finish: a Job until it completes, a Pod until it succeeds. A
// failed Job or Pod ends the wait with an error; other kinds are done once
// created.
func watchHooks(client dynamic.Interface, resources kube.ResourceList, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, info := range resources {
		if info.Mapping == nil {
			continue
		}
		done := hookDone(info.Mapping.GroupVersionKind.GroupKind())
		if done == nil {
			continue
		}
		if err := watchObject(ctx, client, info, done); err != nil {
			if errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
				return fmt.Errorf("%s: %w", resourceID(info), errHookTimeout)
			}
			return err
		}
	}
	return nil
}

// hookDone is the condition a hook of kind gk is waited for with; nil when
// its creation is enough.
func hookDone(gk schema.GroupKind) func(*unstructured.Unstructured) (bool, error) {
	switch gk {
	case jobKind:
		return jobDone
	case schema.GroupKind{Kind: "Pod"}:
		return podDone
	}
	return nil
}

// jobDone: the Job has the Complete condition; Failed is an error.
func jobDone(u *unstructured.Unstructured) (bool, error) {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["status"] != "True" {
			continue
		}
		switch cond["type"] {
		case "Complete":
			return true, nil
		case "Failed":
			return false, fmt.Errorf("job %s failed: %v", u.GetName(), cond["reason"])
		}
	}
	return false, nil
}

// podDone: the Pod succeeded; a failed Pod is an error.
func podDone(u *unstructured.Unstructured) (bool, error) {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	switch phase {
	case "Succeeded":
		return true, nil
	case "Failed":
		return false, fmt.Errorf("pod %s failed", u.GetName())
	}
	return false, nil
}

// watchObject watches info's object until done says so, it fails, or ctx
// ends. An object deleted meanwhile is an error: a hook must finish.
func watchObject(ctx context.Context, client dynamic.Interface, info *resource.Info, done func(*unstructured.Unstructured) (bool, error)) error {
	lw := objectListWatch(client, info)
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(e watch.Event) (bool, error) {
		switch e.Type {
		case watch.Deleted:
			return false, fmt.Errorf("%s was deleted before it finished", resourceID(info))
		case watch.Error:
			return false, apierrors.FromObject(e.Object)
		}
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		return done(u)
	})
	return err
}

// waitDeleted waits until every object of resources is gone.
func waitDeleted(client dynamic.Interface, resources kube.ResourceList, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, info := range resources {
		if info.Mapping == nil {
			continue
		}
		if err := watchUntilGone(ctx, client, info); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", resourceID(info), errDeleteTimeout)
			}
			return err
		}
	}
	return nil
}

// watchUntilGone returns once info's object no longer exists: absent from
// the first list, or deleted since.
func watchUntilGone(ctx context.Context, client dynamic.Interface, info *resource.Info) error {
	lw := objectListWatch(client, info)
	precondition := func(store cache.Store) (bool, error) {
		return len(store.List()) == 0, nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, precondition, func(e watch.Event) (bool, error) {
		switch e.Type {
		case watch.Deleted:
			return true, nil
		case watch.Error:
			return false, apierrors.FromObject(e.Object)
		}
		return false, nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// objectListWatch lists and watches info's object alone, by name.
func objectListWatch(client dynamic.Interface, info *resource.Info) *cache.ListWatch {
	resourceClient := client.Resource(info.Mapping.Resource).Namespace(info.Namespace)
	selector := fields.OneTermEqualSelector("metadata.name", info.Name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			options.FieldSelector = selector
			return resourceClient.List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.FieldSelector = selector
			return resourceClient.Watch(ctx, options)
		},
	}
}
