package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// applyEnv is one API server for every case: each uses its own namespace.
type applyEnv struct {
	c client.Client
	a *Applier
}

func TestApplier(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	e := &applyEnv{c: env.Client, a: NewApplier(env.Client)}
	t.Run("applies server-side and counts changes", e.testApply)
	t.Run("the applies of one kind are sent at once, kind after kind", e.testConcurrentApplies)
	t.Run("an object owned by another layer fails naming both and nothing is applied", e.testOwnershipConflict)
	t.Run("immutable changes recreate only with the force annotation", e.testForce)
	t.Run("released objects are adopted or pruned after the grace period", e.testHandover)
	t.Run("health: HelmReleases by Ready at their generation, Stalled fails", e.testHelmReleaseHealth)
	t.Run("health: a chart-backed kind with no status yet is not ready", e.testChartBackedHealth)
	t.Run("a new test run deletes the previous run's object", e.testPrepareTestRun)
	t.Run("a failed test Job's output is its failure and its pods' messages", e.testJobOutput)
}

// toUnstructured converts a typed object, setting its kind.
func toUnstructured(t *testing.T, obj client.Object, gvk string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	apiVersion, kind, _ := strings.Cut(gvk, ":")
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

func (e *applyEnv) namespace(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Expect(e.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

func layerConfigMap(t *testing.T, ns, name, layer, value string) *unstructured.Unstructured {
	u := toUnstructured(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string]string{"value": value}}, "v1:ConfigMap")
	if err := manifest.LabelOwner(u, layer); err != nil {
		t.Fatal(err)
	}
	return u
}

// listIn makes objs the inventory of layer, creating the layer if needed,
// as the layer's controller would after applying them: the proof of
// ownership the Applier looks for (see Owns).
func (e *applyEnv) listIn(t *testing.T, layer string, objs ...*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	l := &kraanv1.AddonsLayer{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: layer}, l); apierrors.IsNotFound(err) {
		l = &kraanv1.AddonsLayer{ObjectMeta: metav1.ObjectMeta{Name: layer}, Spec: kraanv1.AddonsLayerSpec{
			Version: "1", Source: kraanv1.SourceSpec{Name: "src", Path: "./" + layer}}}
		g.Expect(e.c.Create(ctx, l)).To(Succeed())
	} else {
		g.Expect(err).NotTo(HaveOccurred())
	}
	l.Status.Resources = nil
	for _, obj := range objs {
		ref := RefOf(obj)
		l.Status.Resources = append(l.Status.Resources, kraanv1.Resource{APIVersion: ref.APIVersion, Kind: ref.Kind,
			Namespace: ref.Namespace, Name: ref.Name, Status: "Deployed", LastTransitionTime: metav1.Now()})
	}
	g.Expect(e.c.Status().Update(ctx, l)).To(Succeed())
}

func (e *applyEnv) live(g Gomega, obj client.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	g.Expect(e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), u)).To(Succeed())
	return u
}

func (e *applyEnv) testApply(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := toUnstructured(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apply"}}, "v1:Namespace")
	cm := layerConfigMap(t, "apply", "settings", "base", "a")
	changed, err := e.a.Apply(ctx, "base", []*unstructured.Unstructured{ns, cm})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(Equal(2))
	live := e.live(g, cm)
	g.Expect(live.GetLabels()).To(HaveKeyWithValue(manifest.LayerLabel, "base"))
	g.Expect(live.GetManagedFields()).To(ContainElement(HaveField("Manager", FieldManager)))

	changed, err = e.a.Apply(ctx, "base", []*unstructured.Unstructured{ns, cm})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeZero(), "applying the same objects again changed something")

	changed, err = e.a.Apply(ctx, "base", []*unstructured.Unstructured{ns, layerConfigMap(t, "apply", "settings", "base", "b")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(Equal(1))
	data, _, _ := unstructured.NestedString(e.live(g, cm).Object, "data", "value")
	g.Expect(data).To(Equal("b"))
}

func (e *applyEnv) testOwnershipConflict(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "conflict")
	shared := layerConfigMap(t, "conflict", "shared", "base", "a")
	_, err := e.a.Apply(ctx, "base", []*unstructured.Unstructured{shared})
	g.Expect(err).NotTo(HaveOccurred())
	e.listIn(t, "base", shared)

	fresh := layerConfigMap(t, "conflict", "fresh", "apps", "x")
	_, err = e.a.Apply(ctx, "apps", []*unstructured.Unstructured{fresh, layerConfigMap(t, "conflict", "shared", "apps", "b")})
	var conflict *OwnershipConflictError
	g.Expect(errors.As(err, &conflict)).To(BeTrue(), "got %v", err)
	g.Expect(conflict.Error()).To(And(ContainSubstring("ConfigMap conflict/shared"),
		ContainSubstring("layers base and apps"), ContainSubstring("owned by layer base")))
	err = e.c.Get(ctx, client.ObjectKeyFromObject(fresh), &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an object was applied despite the conflict")

	// A label is no claim: an object someone labelled for base, which base's
	// inventory does not list, is applied by apps.
	claimed := layerConfigMap(t, "conflict", "claimed", "base", "by-hand")
	g.Expect(e.c.Create(ctx, claimed)).To(Succeed())
	_, err = e.a.Apply(ctx, "apps", []*unstructured.Unstructured{layerConfigMap(t, "conflict", "claimed", "apps", "b")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.live(g, claimed).GetLabels()).To(HaveKeyWithValue(manifest.LayerLabel, "apps"))
}

func testJobObject(t *testing.T, ns, name, image string, annotations map[string]string) *unstructured.Unstructured {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "test", Image: image}},
		}}},
	}
	u := toUnstructured(t, job, "batch/v1:Job")
	unstructured.RemoveNestedField(u.Object, "status")
	return u
}

func (e *applyEnv) testForce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "force")
	job := testJobObject(t, "force", "migrate", "busybox:1", nil)
	_, err := e.a.Apply(ctx, "base", []*unstructured.Unstructured{job})
	g.Expect(err).NotTo(HaveOccurred())
	uid := e.live(g, job).GetUID()

	_, err = e.a.Apply(ctx, "base", []*unstructured.Unstructured{testJobObject(t, "force", "migrate", "busybox:2", nil)})
	g.Expect(err).To(HaveOccurred(), "an immutable change was applied without the force annotation")
	g.Expect(e.live(g, job).GetUID()).To(Equal(uid))

	forced := testJobObject(t, "force", "migrate", "busybox:2", map[string]string{ForceAnnotation: ForceEnabled})
	_, err = e.a.Apply(ctx, "base", []*unstructured.Unstructured{forced})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		live := e.live(g, job)
		g.Expect(live.GetUID()).NotTo(Equal(uid), "not recreated")
		containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
		g.Expect(containers[0].(map[string]any)["image"]).To(Equal("busybox:2"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func (e *applyEnv) testHandover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "handover")
	moving := layerConfigMap(t, "handover", "moving", "old", "a")
	dropped := layerConfigMap(t, "handover", "dropped", "old", "a")
	kept := layerConfigMap(t, "handover", "kept", "old", "a")
	kept.SetAnnotations(map[string]string{PruneAnnotation: PruneDisabled})
	_, err := e.a.Apply(ctx, "old", []*unstructured.Unstructured{moving, dropped, kept})
	g.Expect(err).NotTo(HaveOccurred())
	uid := e.live(g, moving).GetUID()

	now := time.Now().Truncate(time.Second)
	grace := time.Minute
	for _, obj := range []*unstructured.Unstructured{moving, dropped} {
		res, err := e.a.Release(ctx, "old", RefOf(obj), grace, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Outcome).To(Equal(Pending))
		g.Expect(res.Until).To(BeTemporally("==", now.Add(grace)))
		g.Expect(e.live(g, obj).GetAnnotations()).To(HaveKey(ReleasedAtAnnotation))
	}
	res, err := e.a.Release(ctx, "old", RefOf(kept), grace, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Outcome).To(Equal(Gone), "an object that opted out of pruning was released")

	// Another layer adopts the moving object: same UID, its labels, no mark;
	// not the kept one, which was not released, nor one that does not exist.
	adopted, err := e.a.AdoptAll(ctx, "new", []*unstructured.Unstructured{
		layerConfigMap(t, "handover", "kept", "new", "a"),
		layerConfigMap(t, "handover", "moving", "new", "a"),
		layerConfigMap(t, "handover", "absent", "new", "a"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(adopted).To(Equal([]bool{false, true, false}))
	live := e.live(g, moving)
	g.Expect(live.GetUID()).To(Equal(uid))
	g.Expect(live.GetLabels()).To(HaveKeyWithValue(manifest.LayerLabel, "new"))
	g.Expect(live.GetAnnotations()).NotTo(HaveKey(ReleasedAtAnnotation))

	// After the grace period: the adopted object, which the new layer's
	// inventory lists, is no longer the old layer's to prune; the dropped one
	// is deleted.
	e.listIn(t, "new", moving)
	// Someone relabelled the dropped object for the new layer, which does
	// not list it: that is no adoption, the old layer still prunes it.
	relabelled := e.live(g, dropped)
	relabelled.SetLabels(map[string]string{manifest.LayerLabel: "new"})
	g.Expect(e.c.Update(ctx, relabelled)).To(Succeed())
	later := now.Add(grace + time.Second)
	res, err = e.a.Release(ctx, "old", RefOf(moving), grace, later)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Outcome).To(Equal(Gone))
	g.Expect(e.live(g, moving).GetUID()).To(Equal(uid))
	res, err = e.a.Release(ctx, "old", RefOf(dropped), grace, later)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Outcome).To(Equal(Pruned))
	err = e.c.Get(ctx, client.ObjectKeyFromObject(dropped), &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

func (e *applyEnv) testHelmReleaseHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "health")
	hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "health", Name: "app"},
		Spec: kraanv1.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Minute}, Chart: &kraanv1.HelmChartTemplate{
			Spec: kraanv1.HelmChartTemplateSpec{Chart: "app", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"}}}}}
	g.Expect(e.c.Create(ctx, hr)).To(Succeed())
	obj := toUnstructured(t, hr, kraanv1.GroupVersion.String()+":HelmRelease")

	h, err := e.a.HealthOf(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(HaveField("Ready", false))
	g.Expect(h.Message).To(ContainSubstring("generation 1 not yet handled"))

	setStatus := func(ready, stalled metav1.ConditionStatus) {
		g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		hr.Status.ObservedGeneration = hr.Generation
		hr.Status.Conditions = []metav1.Condition{
			{Type: kraanv1.ReadyCondition, Status: ready, Reason: "TestFailed", Message: "test hook failed", LastTransitionTime: metav1.Now()},
			{Type: kraanv1.StalledCondition, Status: stalled, Reason: "RetriesExceeded", Message: "no retries left", LastTransitionTime: metav1.Now()},
		}
		g.Expect(e.c.Status().Update(ctx, hr)).To(Succeed())
	}
	setStatus(metav1.ConditionFalse, metav1.ConditionTrue)
	h, err = e.a.HealthOf(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(And(HaveField("Ready", false), HaveField("Failed", true), HaveField("Reason", "TestFailed")))
	setStatus(metav1.ConditionTrue, metav1.ConditionFalse)
	h, err = e.a.HealthOf(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(And(HaveField("Ready", true), HaveField("Failed", false)))

	h, err = e.a.HealthOf(ctx, layerConfigMap(t, "health", "missing", "l", "a"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(And(HaveField("Ready", false), HaveField("Reason", "NotFound")))
}

func (e *applyEnv) testPrepareTestRun(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "runs")
	run := func(id string) *unstructured.Unstructured {
		cm := layerConfigMap(t, "runs", "smoke", "l", "a")
		manifest.StampLayerTestRun(cm, id)
		return cm
	}
	ready, err := e.a.PrepareTestRun(ctx, run("1@r1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ready).To(BeTrue(), "nothing to delete before the first run")
	_, err = e.a.Apply(ctx, "l", []*unstructured.Unstructured{run("1@r1")})
	g.Expect(err).NotTo(HaveOccurred())
	ready, err = e.a.PrepareTestRun(ctx, run("1@r1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ready).To(BeTrue(), "the current run's object was not kept")

	ready, err = e.a.PrepareTestRun(ctx, run("2@r1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ready).To(BeFalse())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKey{Namespace: "runs", Name: "smoke"}, &corev1.ConfigMap{}))
	}).WithTimeout(10*time.Second).Should(BeTrue(), "the previous run's object was not deleted")
	ready, err = e.a.PrepareTestRun(ctx, run("2@r1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ready).To(BeTrue())
}

func (e *applyEnv) testJobOutput(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "output")
	obj := testJobObject(t, "output", "e2e", "busybox:1", nil)
	_, err := e.a.Apply(ctx, "l", []*unstructured.Unstructured{obj})
	g.Expect(err).NotTo(HaveOccurred())
	job := &batchv1.Job{}
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(obj), job)).To(Succeed())

	// A started Job is "current" for kstatus, but a test that has not passed yet.
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Active = 1
	g.Expect(e.c.Status().Update(ctx, job)).To(Succeed())
	h, err := e.a.HealthOf(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Ready).To(BeTrue(), "kstatus changed its mind about running Jobs: %+v", h)
	h, err = e.a.TestHealthOf(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(And(HaveField("Ready", false), HaveField("Failed", false), HaveField("Reason", "InProgress")))
	g.Expect(h.Message).To(ContainSubstring("1 active"))

	// Play the Job controller and the kubelet: one failed pod of this Job,
	// one of an earlier Job of the same name (another UID).
	e.failedPod(t, "output", "e2e-abcde", string(job.UID), "step 1 ok\nstep 2 ok\nFAIL: expected 200, got 503")
	e.failedPod(t, "output", "e2e-old", "an-earlier-job", "output of an earlier run")
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(obj), job)).To(Succeed())
	job.Status.Active = 0
	job.Status.Failed = 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
	}
	g.Expect(e.c.Status().Update(ctx, job)).To(Succeed())

	h, err = e.a.TestHealthOf(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(And(HaveField("Failed", true), HaveField("Reason", "Failed")))
	g.Expect(h.Message).To(Equal("BackoffLimitExceeded: Job has reached the specified backoff limit"))
	out, err := e.a.TestOutput(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("container e2e-abcde/test exited 1:\nstep 1 ok\nstep 2 ok\nFAIL: expected 200, got 503"))
	g.Expect(out).NotTo(ContainSubstring("earlier run"))
}

// failedPod creates a pod of the Job with UID jobUID that failed with message.
func (e *applyEnv) failedPod(t *testing.T, ns, name, jobUID, message string) {
	g := NewWithT(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{batchv1.ControllerUidLabel: jobUID}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "test", Image: "busybox:1"}}},
	}
	g.Expect(e.c.Create(ctx, pod)).To(Succeed())
	now := metav1.Now()
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "test", Image: "busybox:1", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: message, StartedAt: now, FinishedAt: now}}}}
	g.Expect(e.c.Status().Update(ctx, pod)).To(Succeed())
}

func (e *applyEnv) testChartBackedHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "hab")
	hab := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "habitat.kraan.io/v1alpha1", "kind": "Habitat",
		"metadata": map[string]any{"namespace": "hab", "name": "redis"},
		"spec": map[string]any{"image": "kinvolk/redis-hab", "count": int64(1),
			"service": map[string]any{"name": "redis", "topology": "standalone"}},
	}}
	g.Expect(e.c.Create(ctx, hab.DeepCopy())).To(Succeed())

	// kstatus gives an object without status the benefit of the doubt ...
	h, err := e.a.HealthOf(ctx, hab)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Ready).To(BeTrue())
	// ... which a kind the operator reconciles does not get: it is ready when
	// the operator says so.
	chartBacked := NewApplier(e.c, schema.GroupKind{Group: "habitat.kraan.io", Kind: "Habitat"})
	h, err = chartBacked.HealthOf(ctx, hab)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Ready).To(BeFalse())
	g.Expect(h.Message).To(ContainSubstring("generation 1 not yet handled"))

	live := e.live(g, hab)
	g.Expect(unstructured.SetNestedField(live.Object, int64(1), "status", "observedGeneration")).To(Succeed())
	g.Expect(unstructured.SetNestedSlice(live.Object, []any{map[string]any{"type": "Ready", "status": "True",
		"reason": "ReleaseSucceeded", "message": "The release is deployed", "lastTransitionTime": "2026-11-30T00:00:00Z"}},
		"status", "conditions")).To(Succeed())
	g.Expect(e.c.Status().Update(ctx, live)).To(Succeed())
	h, err = chartBacked.HealthOf(ctx, hab)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Ready).To(BeTrue(), "%+v", h)
}

func (e *applyEnv) testConcurrentApplies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e.namespace(t, "concurrent")
	const configMaps = 4
	objs := make([]*unstructured.Unstructured, 0, 1+configMaps)
	objs = append(objs, toUnstructured(t, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "concurrent", Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, "v1:Service"))
	for i := range configMaps {
		objs = append(objs, layerConfigMap(t, "concurrent", fmt.Sprintf("cm-%d", i), "base", "a"))
	}
	// Each ConfigMap's apply waits until all of them are in flight: sent one
	// at a time, the first would wait alone until its deadline and fail.
	barrier := &applyBarrier{Client: e.c, kind: "ConfigMap", want: configMaps, reached: make(chan struct{})}
	changed, err := NewApplier(barrier).Apply(ctx, "base", objs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(Equal(configMaps + 1))
	g.Expect(barrier.started).To(Equal([]string{"ConfigMap", "ConfigMap", "ConfigMap", "ConfigMap", "Service"}),
		"the Service was applied before the ConfigMaps, which come first in apply order, were")
	for _, obj := range objs {
		e.live(g, obj)
	}

	// A dry run that fails still applies nothing of the stage.
	bad := layerConfigMap(t, "concurrent", "bad", "base", "a")
	g.Expect(unstructured.SetNestedField(bad.Object, int64(1), "data", "value")).To(Succeed())
	fresh := layerConfigMap(t, "concurrent", "fresh", "base", "a")
	_, err = e.a.Apply(ctx, "base", []*unstructured.Unstructured{fresh, bad})
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap/concurrent/bad")))
	err = e.c.Get(ctx, client.ObjectKeyFromObject(fresh), &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an object was applied although another one failed its dry run")
}

// applyBarrier records the kinds of the applies sent through it, and holds
// each apply of kind until want of them are in flight, for at most 10 s.
type applyBarrier struct {
	client.Client
	kind     string
	want     int
	reached  chan struct{}
	mu       sync.Mutex
	inFlight int
	started  []string
}

func (b *applyBarrier) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if !isApply(patch, opts) {
		return b.Client.Patch(ctx, obj, patch, opts...)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	b.mu.Lock()
	b.started = append(b.started, kind)
	if kind == b.kind {
		if b.inFlight++; b.inFlight == b.want {
			close(b.reached)
		}
	}
	b.mu.Unlock()
	if kind == b.kind {
		select {
		case <-b.reached:
		case <-time.After(10 * time.Second): // a deadline, not a pause: the barrier opens at once when reached
			b.mu.Lock()
			defer b.mu.Unlock()
			return fmt.Errorf("%s: %d of %d applies of %s in flight", obj.GetName(), b.inFlight, b.want, b.kind)
		}
	}
	return b.Client.Patch(ctx, obj, patch, opts...)
}
