package helm

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// engineWaiterOf unwraps the waiter Helm got down to the engine's own; nil
// when it is anything else (one of Helm's waiters).
func engineWaiterOf(w kube.Waiter) *engineWaiter {
	if o, ok := w.(*owningWaiter); ok {
		w = o.Waiter
	}
	e, _ := w.(*engineWaiter)
	return e
}

// kubeClientOf unwraps the kube client of an action configuration down to
// Helm's own client.
func kubeClientOf(t *testing.T, cfg *action.Configuration) *kube.Client {
	t.Helper()
	kc := cfg.KubeClient
	if b, ok := kc.(*boundedClient); ok {
		kc = b.helmKubeClient
	}
	o, ok := kc.(*owningClient)
	if !ok {
		t.Fatalf("the kube client handed to Helm is a %T, not the engine's", cfg.KubeClient)
	}
	return o.Client
}

// TestConfigFor_HelmGetsTheEnginesWaiterForEveryStrategy: every action
// asks its kube client for a waiter (GetWaiter or GetWaiterWithOptions,
// hooks, uninstall and rollback included). Whatever the strategy, the
// answer is the engine's waiter, so no wait of Helm's (its kstatus watcher
// or its legacy poller) ever runs; Helm's client keeps no waiter of its own
// either.
func TestConfigFor_HelmGetsTheEnginesWaiterForEveryStrategy(t *testing.T) {
	_, engine := startEngine(t)
	bounded := &Bounds{Owner: "Gadget default/one", Namespace: "default", Kinds: []schema.GroupKind{{Kind: "ConfigMap"}}}
	strategies := []kube.WaitStrategy{kube.StatusWatcherStrategy, kube.LegacyStrategy, kube.HookOnlyStrategy, "", "unknown"}
	for _, bounds := range []*Bounds{nil, bounded} {
		g := NewWithT(t)
		cfg, err := engine.configFor(Target{ReleaseName: "r", Namespace: "default", StorageNamespace: "default", Bounds: bounds},
			slog.DiscardHandler, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(kubeClientOf(t, cfg).Waiter).To(BeAssignableToTypeOf(&engineWaiter{}))
		withOptions, ok := cfg.KubeClient.(kube.InterfaceWaitOptions)
		g.Expect(ok).To(BeTrue(), "Helm takes the waiter with options from an InterfaceWaitOptions")
		for _, ws := range strategies {
			w, err := cfg.KubeClient.GetWaiter(ws)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(engineWaiterOf(w)).NotTo(BeNil(), "GetWaiter(%q) gave %T", ws, w)
			g.Expect(engineWaiterOf(w).hooksOnly).To(Equal(ws == kube.HookOnlyStrategy || ws == ""))
			w, err = withOptions.GetWaiterWithOptions(ws, kube.WithWaitContext(context.Background()))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(engineWaiterOf(w)).NotTo(BeNil(), "GetWaiterWithOptions(%q) gave %T", ws, w)
		}
	}
}

// waiterFor is the waiter an action of a release in namespace gets, and
// the resources of manifest as Helm builds them.
func waiterFor(t *testing.T, engine *Engine, namespace string, ws kube.WaitStrategy, manifest string) (kube.Waiter, kube.ResourceList) {
	t.Helper()
	g := NewWithT(t)
	cfg, err := engine.configFor(Target{ReleaseName: "r", Namespace: namespace, StorageNamespace: namespace}, testLogHandler(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	resources, err := cfg.KubeClient.Build(bytes.NewBufferString(manifest), false)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cfg.KubeClient.GetWaiter(ws)
	g.Expect(err).NotTo(HaveOccurred())
	return w, resources
}

const hookPod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  annotations:
    helm.sh/hook: post-install
spec:
  containers:
  - name: c
    image: registry.example/hook
`

func createPod(g Gomega, c client.Client, namespace, name string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: map[string]string{hookAnnotation: "post-install"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/hook"}}},
	}
	g.Expect(c.Create(context.Background(), pod)).To(Succeed())
	return pod
}

// TestEngineWaiter_WatchUntilReady_waitsForHookPodsToSucceed: a hook Pod is
// done when it succeeded, and a failed one fails the hook, from the Pod's
// watch events.
func TestEngineWaiter_WatchUntilReady_waitsForHookPodsToSucceed(t *testing.T) {
	env, engine := startEngine(t)
	ctx := context.Background()
	for _, tc := range []struct {
		phase corev1.PodPhase
		err   string
	}{{phase: corev1.PodSucceeded}, {phase: corev1.PodFailed, err: "failed"}} {
		t.Run(string(tc.phase), func(t *testing.T) {
			g := NewWithT(t)
			ns := "hook-" + strings.ToLower(string(tc.phase))
			g.Expect(env.Client.Create(ctx, namespaceObject(ns))).To(Succeed())
			pod := createPod(g, env.Client, ns, "test")
			w, resources := waiterFor(t, engine, ns, kube.HookOnlyStrategy, fmt.Sprintf(hookPod, "test", ns))

			done := make(chan error, 1)
			go func() { done <- w.WatchUntilReady(resources, time.Minute) }()
			g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "the Pod has not finished")

			pod.Status.Phase = tc.phase
			g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
			var err error
			g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&err))
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
			}
		})
	}
}

// TestEngineWaiter_WatchUntilReady_timesOut: a hook that never finishes
// fails at the timeout, naming the object.
func TestEngineWaiter_WatchUntilReady_timesOut(t *testing.T) {
	env, engine := startEngine(t)
	g := NewWithT(t)
	g.Expect(env.Client.Create(context.Background(), namespaceObject("hook-timeout"))).To(Succeed())
	createPod(g, env.Client, "hook-timeout", "stuck")
	w, resources := waiterFor(t, engine, "hook-timeout", kube.LegacyStrategy, fmt.Sprintf(hookPod, "stuck", "hook-timeout"))
	err := w.WatchUntilReady(resources, 2*time.Second)
	g.Expect(err).To(MatchError(And(ContainSubstring("Pod hook-timeout/stuck"), ContainSubstring("timed out"))))
}

const plainConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
  annotations:
    meta.helm.sh/release-name: r
    meta.helm.sh/release-namespace: %s
`

const hookConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
  annotations:
    helm.sh/hook: pre-delete
    meta.helm.sh/release-name: r
    meta.helm.sh/release-namespace: %s
`

func createConfigMap(g Gomega, c client.Client, namespace, name string, hook bool) *corev1.ConfigMap {
	a := map[string]string{ReleaseNameAnnotation: "r", ReleaseNamespaceAnnotation: namespace}
	if hook {
		a[hookAnnotation] = "pre-delete"
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: a}}
	g.Expect(c.Create(context.Background(), cm)).To(Succeed())
	return cm
}

// TestEngineWaiter_WaitForDelete: a wait for deletes ends when the object
// is gone. An action that does not wait (HookOnlyStrategy) still waits for
// its deleted hooks, as Helm 3 did, but not for the rest.
func TestEngineWaiter_WaitForDelete(t *testing.T) {
	env, engine := startEngine(t)
	ctx := context.Background()
	g := NewWithT(t)
	ns := "deletes"
	g.Expect(env.Client.Create(ctx, namespaceObject(ns))).To(Succeed())

	cm := createConfigMap(g, env.Client, ns, "waited", false)
	w, resources := waiterFor(t, engine, ns, kube.LegacyStrategy, fmt.Sprintf(plainConfigMap, "waited", ns, ns))
	done := make(chan error, 1)
	go func() { done <- w.WaitForDelete(resources, time.Minute) }()
	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "the ConfigMap still exists")
	g.Expect(env.Client.Delete(ctx, cm)).To(Succeed())
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))

	createConfigMap(g, env.Client, ns, "not-a-hook", false)
	w, resources = waiterFor(t, engine, ns, kube.HookOnlyStrategy, fmt.Sprintf(plainConfigMap, "not-a-hook", ns, ns))
	g.Expect(w.WaitForDelete(resources, 2*time.Second)).To(Succeed(), "not waited for without a wait")

	createConfigMap(g, env.Client, ns, "hook", true)
	w, resources = waiterFor(t, engine, ns, kube.HookOnlyStrategy, fmt.Sprintf(hookConfigMap, "hook", ns, ns))
	g.Expect(w.WaitForDelete(resources, 2*time.Second)).To(MatchError(ContainSubstring("ConfigMap deletes/hook")),
		"a deleted hook is waited for even without a wait")
}

// TestJobDone reads a Job's conditions as a hook's outcome.
func TestJobDone(t *testing.T) {
	g := NewWithT(t)
	job := func(conditions ...map[string]any) *unstructured.Unstructured {
		list := make([]any, 0, len(conditions))
		for _, c := range conditions {
			list = append(list, c)
		}
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "j"},
			"status": map[string]any{"conditions": list}}}
	}
	done, err := jobDone(job())
	g.Expect(done, err).To(BeFalse())
	done, err = jobDone(job(map[string]any{"type": "Complete", "status": "True"}))
	g.Expect(done, err).To(BeTrue())
	_, err = jobDone(job(map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}))
	g.Expect(err).To(MatchError(ContainSubstring("BackoffLimitExceeded")))
	done, err = jobDone(job(map[string]any{"type": "Complete", "status": "False"}))
	g.Expect(done, err).To(BeFalse())
}

// TestWaitedFor_byStrategy: WaitLegacy judges Helm 3's kinds (Jobs only
// when waiting for jobs); WaitPoller every object of the release.
func TestWaitedFor_byStrategy(t *testing.T) {
	g := NewWithT(t)
	object := func(group, version, kind, name string) *resource.Info {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
		return &resource.Info{Name: name, Namespace: "shop", Object: u, Mapping: &meta.RESTMapping{
			GroupVersionKind: u.GroupVersionKind(), Resource: schema.GroupVersionResource{Group: group, Version: version, Resource: strings.ToLower(kind) + "s"}}}
	}
	resources := kube.ResourceList{object("apps", "v1", "Deployment", "web"), object("", "v1", "ConfigMap", "conf"),
		object("batch", "v1", "Job", "migrate"), object("example.com", "v1", "Widget", "w")}
	names := func(objs []rollout.Object) []string {
		out := make([]string, 0, len(objs))
		for _, o := range objs {
			out = append(out, o.Name)
		}
		return out
	}
	g.Expect(names(waitedFor(resources, false, ""))).To(Equal([]string{"web"}))
	g.Expect(names(waitedFor(resources, true, WaitLegacy))).To(Equal([]string{"web", "migrate"}))
	g.Expect(names(waitedFor(resources, false, WaitPoller))).To(Equal([]string{"web", "conf", "migrate", "w"}))
}
