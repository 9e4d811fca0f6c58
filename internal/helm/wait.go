package helm

import (
	"context"
	"errors"
	"slices"
	"time"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// WaitStrategy says which of a release's objects a wait judges; each is
// judged by kstatus from the watch events of the cluster's rollout tracker.
type WaitStrategy string

const (
	// WaitLegacy judges what Helm 3's wait judged: workloads, Pods,
	// PersistentVolumeClaims, LoadBalancer Services, CRDs and, when the
	// action waits for jobs, Jobs. Everything else is ready once applied.
	// The empty strategy is WaitLegacy.
	WaitLegacy WaitStrategy = "legacy"
	// WaitPoller judges every object of the release (Flux's kstatus poller).
	WaitPoller WaitStrategy = "poller"
)

// watchingClient is Helm's kube client with every wait served by the
// engine: readiness comes from the cluster's rollout tracker, from watch
// events shared by every release, instead of each action polling its
// objects, and the run's slot is given back while it waits (Pause). Helm
// asks its kube client for a waiter before each wait; whatever the strategy,
// it gets ours (engineWaiter), never one of Helm's own.
type watchingClient struct {
	*kube.Client
	tracker *rollout.Tracker
	pause   func() (resume func())
	// superseded, when closed, ends a wait with ErrWaitSuperseded.
	superseded <-chan struct{}
	// apis is told when a wait included CRDs: the kinds they define are
	// served from then on.
	apis *servedAPIs
	// strategy says which objects Wait judges.
	strategy WaitStrategy
	// healthChecks judge the objects of their kinds under WaitPoller.
	healthChecks []rollout.HealthCheckExpr
	// dynamic watches hooks and deleted objects.
	dynamic dynamic.Interface
}

var _ kube.InterfaceWaitOptions = &watchingClient{}

// IsReachable is answered by the action's first request instead: Helm's
// check is one more GET /version per action, through a client of its own.
func (c *watchingClient) IsReachable() error { return nil }

// GetWaiter implements kube.Interface: the engine's waiter, whatever ws.
func (c *watchingClient) GetWaiter(ws kube.WaitStrategy) (kube.Waiter, error) {
	return c.GetWaiterWithOptions(ws)
}

// GetWaiterWithOptions implements kube.InterfaceWaitOptions: the engine's
// waiter, whatever ws. Helm's wait options (contexts for its own waiters,
// kstatus readers) do not apply to it; the engine sets none. No strategy
// (which Helm's own client refuses) waits for hooks only, as an action of
// Helm 3 that was not asked to wait.
func (c *watchingClient) GetWaiterWithOptions(ws kube.WaitStrategy, _ ...kube.WaitOption) (kube.Waiter, error) {
	return &engineWaiter{client: c, hooksOnly: ws == kube.HookOnlyStrategy || ws == ""}, nil
}

// engineWaiter is the kube.Waiter Helm's actions get. An action that does
// not wait (Helm's HookOnlyStrategy) still waits for its hooks, as in Helm 3.
type engineWaiter struct {
	client    *watchingClient
	hooksOnly bool
}

// Wait waits for the resources the strategy judges (see waitedFor).
func (w *engineWaiter) Wait(resources kube.ResourceList, timeout time.Duration) error {
	if w.hooksOnly {
		return nil
	}
	return w.client.wait(resources, timeout, false)
}

// WaitWithJobs is Wait, Jobs included: a failed Job ends it at once.
func (w *engineWaiter) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	if w.hooksOnly {
		return nil
	}
	return w.client.wait(resources, timeout, true)
}

// WaitForDelete waits until the resources are gone. Helm 3 always waited
// for deleted hooks (a hook re-created under the before-hook-creation policy
// would otherwise find its predecessor still terminating) and for an
// uninstall's objects only when the uninstall waits: an action that does not
// wait waits for hooks alone.
func (w *engineWaiter) WaitForDelete(resources kube.ResourceList, timeout time.Duration) error {
	if w.hooksOnly {
		resources = resources.Filter(isHook)
	}
	return waitDeleted(w.client.dynamic, resources, timeout)
}

// WatchUntilReady waits for hooks: Jobs until complete, Pods until
// succeeded; any other kind is ready once created.
func (w *engineWaiter) WatchUntilReady(resources kube.ResourceList, timeout time.Duration) error {
	return watchHooks(w.client.dynamic, resources, timeout)
}

func (c *watchingClient) wait(resources kube.ResourceList, timeout time.Duration, jobs bool) error {
	objs := waitedFor(resources, jobs, c.strategy)
	if len(objs) == 0 {
		return nil
	}
	if c.pause != nil {
		resume := c.pause()
		defer resume()
	}
	// Not the reconcile's context: a wait cut short by the operator's
	// shutdown would fail the release. The process ends instead, the
	// revision stays pending, and the next process resumes the wait. Only a
	// newer desired state ends it early (superseded).
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if c.superseded != nil {
		go func() {
			select {
			case <-c.superseded:
				cancel(ErrWaitSuperseded)
			case <-ctx.Done():
			}
		}()
	}
	err := c.tracker.Wait(ctx, objs, timeout, c.waitOptions(jobs))
	if errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx), ErrWaitSuperseded) {
		err = ErrWaitSuperseded
	}
	if c.apis != nil && slices.ContainsFunc(objs, func(o rollout.Object) bool { return o.Kind == "CustomResourceDefinition" }) {
		c.apis.invalidate()
	}
	return err
}

// ErrWaitSuperseded ends a wait a newer desired state made pointless (see
// Request.WaitSuperseded).
var ErrWaitSuperseded = errors.New("the wait was cancelled: a newer revision of the spec arrived and is applied next")

// waitOptions are the tracker's options of a wait, with jobs or not: under
// WaitPoller every object the wait hands is judged by kstatus or its kind's
// health check expression, and a Failed one ends the wait at once.
func (c *watchingClient) waitOptions(jobs bool) rollout.Options {
	opts := rollout.Options{FailFast: jobs, Strategy: rollout.StrategyLegacy}
	if c.strategy == WaitPoller {
		opts.Strategy, opts.HealthCheckExprs = rollout.StrategyPoller, c.healthChecks
	}
	return opts
}

// waitedFor are the objects among resources whose readiness the strategy
// judges: under WaitLegacy, those Helm 3's wait checked (workloads, Pods,
// PersistentVolumeClaims, LoadBalancer Services, CRDs and, with jobs, Jobs);
// under WaitPoller, all of them (the tracker's options say how).
func waitedFor(resources kube.ResourceList, jobs bool, strategy WaitStrategy) []rollout.Object {
	var out []rollout.Object
	for _, info := range resources {
		if info.Mapping == nil {
			continue
		}
		gvk := info.Mapping.GroupVersionKind
		if !judged(gvk.GroupKind(), info.Object, jobs, strategy) {
			continue
		}
		var generation int64
		if acc, err := meta.Accessor(info.Object); err == nil {
			generation = acc.GetGeneration()
		}
		out = append(out, rollout.Object{Resource: info.Mapping.Resource, Kind: gvk.Kind,
			Namespace: info.Namespace, Name: info.Name, Generation: generation})
	}
	return out
}

const appsGroup = "apps"

// waitedKinds are the kinds Helm's ready checker always judges; Jobs (with
// jobs) and LoadBalancer Services are judged too (waitsFor).
var waitedKinds = map[schema.GroupKind]bool{
	{Group: appsGroup, Kind: "Deployment"}:                            true,
	{Group: appsGroup, Kind: "StatefulSet"}:                           true,
	{Group: appsGroup, Kind: "DaemonSet"}:                             true,
	{Group: appsGroup, Kind: "ReplicaSet"}:                            true,
	{Kind: "ReplicationController"}:                                   true,
	{Kind: "Pod"}:                                                     true,
	{Kind: "PersistentVolumeClaim"}:                                   true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: true,
}

// judged says whether the strategy judges an object of kind gk. Under
// WaitPoller every object is, Jobs included: kstatus finds a Job Current
// once it started, and only a wait for jobs asks it to complete (the
// tracker's FailFast).
func judged(gk schema.GroupKind, obj runtime.Object, jobs bool, strategy WaitStrategy) bool {
	if strategy == WaitPoller {
		return true
	}
	return waitsFor(gk, obj, jobs)
}

var jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

func waitsFor(gk schema.GroupKind, obj runtime.Object, jobs bool) bool {
	switch gk {
	case jobKind:
		return jobs
	case schema.GroupKind{Kind: "Service"}:
		return serviceType(obj) == "LoadBalancer"
	}
	return waitedKinds[gk]
}

// serviceType reads spec.type of a Service, typed or unstructured.
func serviceType(obj runtime.Object) string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return ""
		}
		u = &unstructured.Unstructured{Object: m}
	}
	t, _, _ := unstructured.NestedString(u.Object, "spec", "type")
	return t
}
