package helm

import (
	"context"
	"slices"
	"time"

	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// watchingClient is Helm's kube client with its waits served by the
// cluster's rollout tracker: readiness comes from watch events shared by every
// release, instead of each action polling its objects every 2 seconds, and
// the run's slot is given back while it waits (Pause).
type watchingClient struct {
	*kube.Client
	tracker *rollout.Tracker
	pause   func() (resume func())
	// apis is told when a wait included CRDs: the kinds they define are
	// served from then on.
	apis *servedAPIs
}

// IsReachable is answered by the action's first request instead: Helm's
// check is one more GET /version per action, through a client of its own.
func (c *watchingClient) IsReachable() error { return nil }

// Wait waits for the resources Helm waits for (see waitedFor).
func (c *watchingClient) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait(resources, timeout, false)
}

// WaitWithJobs is Wait, Jobs included: a failed Job ends it at once.
func (c *watchingClient) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait(resources, timeout, true)
}

func (c *watchingClient) wait(resources kube.ResourceList, timeout time.Duration, jobs bool) error {
	objs := waitedFor(resources, jobs)
	if len(objs) == 0 {
		return nil
	}
	if c.pause != nil {
		resume := c.pause()
		defer resume()
	}
	// Not the reconcile's context: a wait cut short by the operator's
	// shutdown would fail the release. The process ends instead, the
	// revision stays pending, and the next process resumes the wait.
	err := c.tracker.Wait(context.Background(), objs, timeout, rollout.Options{FailFast: jobs})
	if c.apis != nil && slices.ContainsFunc(objs, func(o rollout.Object) bool { return o.Kind == "CustomResourceDefinition" }) {
		c.apis.invalidate()
	}
	return err
}

// waitedFor are the objects among resources whose readiness Helm's wait
// checks: workloads, Pods, PersistentVolumeClaims, LoadBalancer Services, CRDs
// and, with jobs, Jobs. Everything else is ready once applied, as in Helm.
func waitedFor(resources kube.ResourceList, jobs bool) []rollout.Object {
	var out []rollout.Object
	for _, info := range resources {
		if info.Mapping == nil {
			continue
		}
		gvk := info.Mapping.GroupVersionKind
		if !waitsFor(gvk.GroupKind(), info.Object, jobs) {
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

func waitsFor(gk schema.GroupKind, obj runtime.Object, jobs bool) bool {
	switch gk {
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
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
