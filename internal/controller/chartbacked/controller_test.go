package chartbacked

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/watches"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// startChartEnv starts an API server with the Gadget CRD and a manager
// running the chart reconcilers of testdata/watches.yaml — a kind with no Go
// code at all — each entry changed by edits. It returns a client; everything
// stops when t ends.
func startChartEnv(t *testing.T, edits ...func(*watches.Watch)) client.Client {
	t.Helper()
	g := NewWithT(t)
	t.Setenv("GADGET_EXTRA", "from-the-environment")
	list, err := watches.Load(filepath.Join("testdata", "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	for i := range list {
		for _, edit := range edits {
			edit(&list[i])
		}
	}
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("testdata", "crds")}, ErrorIfPathMissing: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	mgr := testenv.NewManager(t, env.Config)
	engine, err := helm.NewEngine(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(engine.Close) // after the manager stops, before the API server does
	for _, w := range list {
		g.Expect(Setup(mgr, engine, w, Options{ControllerOptions: kit.ControllerOptions{MaxConcurrentReconciles: 2}})).To(Succeed())
	}
	testenv.RunManager(t, mgr)
	return env.Client
}

// newGadget returns a Gadget in namespace ns.
func newGadget(ns, name string, spec map[string]any, annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetAPIVersion("charttest.kraan.io/v1")
	obj.SetKind("Gadget")
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetAnnotations(annotations)
	return obj
}

// conditionOf returns the status and reason of a condition of obj.
func conditionOf(c client.Client, obj *unstructured.Unstructured, condType string) func(Gomega) string {
	return func(g Gomega) string {
		got := obj.DeepCopy()
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
		for _, cond := range chartConditions(got) {
			if cond.Type == condType {
				return string(cond.Status) + "/" + cond.Reason
			}
		}
		return ""
	}
}

// updateGadget sets one field of obj, retrying on conflicts with the
// reconciler's own writes (finalizer, status).
func updateGadget(g Gomega, c client.Client, obj *unstructured.Unstructured, value any, path ...string) {
	g.Eventually(func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(obj.Object, value, path...); err != nil {
			return err
		}
		return c.Update(context.Background(), obj)
	}, 30*time.Second).Should(Succeed())
}

func TestReconciler_Lifecycle(t *testing.T) {
	g := NewWithT(t)
	c := startChartEnv(t)
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "gadgets")
	gadget := newGadget("gadgets", "one", map[string]any{"message": "first", "replicas": int64(2)}, nil)
	g.Expect(c.Create(ctx, gadget)).To(Succeed())

	// Installing the release with the spec and the overrides as values.
	cm := &corev1.ConfigMap{}
	cmKey := types.NamespacedName{Namespace: "gadgets", Name: "one-config"}
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(c.Get(ctx, cmKey, cm)).To(Succeed())
		return cm.Data
	}, 30*time.Second).Should(Equal(map[string]string{"message": "first", "extra": "from-the-environment"}))
	g.Expect(cm.OwnerReferences).To(ConsistOf(HaveField("Name", "one")))
	g.Expect(*cm.OwnerReferences[0].Controller).To(BeTrue())
	g.Eventually(conditionOf(c, gadget, kraanv1.ReadyCondition), 30*time.Second).Should(Equal("True/ReleaseSucceeded"))
	g.Expect(conditionOf(c, gadget, kraanv1.DeployedCondition)(g)).To(Equal("True/InstallSuccessful"))
	g.Expect(conditionOf(c, gadget, kraanv1.InitializedCondition)(g)).To(Equal("True/Reconciling"))
	g.Expect(conditionOf(c, gadget, kraanv1.ReleaseFailedCondition)(g)).To(Equal("False/ReleaseSucceeded"))
	g.Expect(conditionOf(c, gadget, kraanv1.IrreconcilableCondition)(g)).To(Equal("False/Reconcilable"))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gadget), gadget)).To(Succeed())
	// The release is named, never published: a manifest may hold Secret data.
	deployed, _, _ := unstructured.NestedMap(gadget.Object, "status", "deployedRelease")
	g.Expect(deployed).To(Equal(map[string]any{"name": "one", "revision": int64(1), "status": "deployed"}))
	g.Expect(gadget.GetFinalizers()).To(ContainElement(kraanv1.ChartFinalizer))

	// Restoring a deleted dependent.
	g.Expect(c.Delete(ctx, cm)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, cmKey, &corev1.ConfigMap{}) }, 30*time.Second).Should(Succeed())

	// Restoring a hand-edited Deployment.
	dep := &appsv1.Deployment{}
	depKey := types.NamespacedName{Namespace: "gadgets", Name: "one"}
	g.Eventually(func() error {
		if err := c.Get(ctx, depKey, dep); err != nil {
			return err
		}
		dep.Spec.Replicas = ptr.To[int32](7)
		return c.Update(ctx, dep)
	}, 30*time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) int32 {
		g.Expect(c.Get(ctx, depKey, dep)).To(Succeed())
		return *dep.Spec.Replicas
	}, 30*time.Second).Should(BeEquivalentTo(2))

	// Upgrading on a spec change.
	updateGadget(g, c, gadget, "second", "spec", "message")
	g.Eventually(func(g Gomega) string {
		g.Expect(c.Get(ctx, cmKey, cm)).To(Succeed())
		return cm.Data["message"]
	}, 30*time.Second).Should(Equal("second"))
	g.Eventually(conditionOf(c, gadget, kraanv1.DeployedCondition), 30*time.Second).Should(Equal("True/UpgradeSuccessful"))

	// Uninstalling on delete.
	g.Expect(c.Delete(ctx, gadget)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(gadget), gadget.DeepCopy()))
	}, 30*time.Second).Should(BeTrue())
	g.Expect(apierrors.IsNotFound(c.Get(ctx, cmKey, cm))).To(BeTrue(), "the uninstall deletes the release's objects")
	secrets := &corev1.SecretList{}
	g.Expect(c.List(ctx, secrets, client.InNamespace("gadgets"), client.MatchingLabels{"owner": "helm", "name": "one"})).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty())
}

func TestReconciler_Annotations_DisableHooks(t *testing.T) {
	g := NewWithT(t)
	c := startChartEnv(t)
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "hooks")
	g.Expect(c.Create(ctx, newGadget("hooks", "with", map[string]any{}, nil))).To(Succeed())
	g.Expect(c.Create(ctx, newGadget("hooks", "without", map[string]any{},
		map[string]string{AnnotationInstallDisableHooks: "true"}))).To(Succeed())
	g.Eventually(func() error {
		return c.Get(ctx, types.NamespacedName{Namespace: "hooks", Name: "with-hook"}, &corev1.ConfigMap{})
	}, 30*time.Second).Should(Succeed())
	without := newGadget("hooks", "without", nil, nil)
	g.Eventually(conditionOf(c, without, kraanv1.DeployedCondition), 30*time.Second).Should(Equal("True/InstallSuccessful"))
	err := c.Get(ctx, types.NamespacedName{Namespace: "hooks", Name: "without-hook"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "install-disable-hooks must skip the post-install hook")
}

func TestActionsFor_Annotations(t *testing.T) {
	g := NewWithT(t)
	obj := newGadget("ns", "a", nil, map[string]string{
		AnnotationUpgradeForce: "true", AnnotationUpgradeDisableHooks: "1",
		AnnotationUninstallDisableHooks: "yes", // invalid: false, as Operator SDK
	})
	spec := actionsFor(obj)
	g.Expect(spec.Upgrade.Force).To(BeTrue())
	g.Expect(spec.Upgrade.DisableHooks).To(BeTrue())
	g.Expect(spec.Install.DisableHooks).To(BeFalse())
	g.Expect(spec.Uninstall.DisableHooks).To(BeFalse())
	g.Expect(spec.Rollback.Force).To(BeTrue(), "rollback-force defaults to true, as in Operator SDK")
	g.Expect(spec.Uninstall.DisableWait).To(BeTrue(), "uninstall does not wait unless asked")

	spec = actionsFor(newGadget("ns", "b", nil, map[string]string{
		AnnotationRollbackForce: "false", AnnotationUninstallWait: "true"}))
	g.Expect(spec.Rollback.Force).To(BeFalse())
	g.Expect(spec.Uninstall.DisableWait).To(BeFalse())
}

func TestReconciler_PeriodFor(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"":     time.Minute, // unset: the watch's period
		"30s":  30 * time.Second,
		"2h":   2 * time.Hour,
		"soon": time.Minute, // invalid: the watch's period
		"-5m":  time.Minute,
		"0s":   time.Minute,
		"1ms":  10 * time.Second, // below the floor: the floor
		"10s":  10 * time.Second,
	} {
		g := NewWithT(t)
		period := metav1.Duration{Duration: time.Minute}
		r := &Reconciler{Watch: watches.Watch{ReconcilePeriod: &period}, floor: kit.NewIntervalFloor(10 * time.Second)}
		obj := newGadget("ns", "a", nil, map[string]string{AnnotationReconcilePeriod: value})
		g.Expect(r.periodFor(context.Background(), obj)).To(Equal(want), "annotation %q", value)
	}
	// The watch's own period is the operator's choice: no floor.
	g := NewWithT(t)
	period := metav1.Duration{Duration: time.Second}
	r := &Reconciler{Watch: watches.Watch{ReconcilePeriod: &period}, floor: kit.NewIntervalFloor(10 * time.Second)}
	g.Expect(r.periodFor(context.Background(), newGadget("ns", "a", nil, nil))).To(Equal(time.Second))
}

func TestReconciler_ReleaseFailure_ReportedThenRecovered(t *testing.T) {
	g := NewWithT(t)
	c := startChartEnv(t)
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "failing")
	gadget := newGadget("failing", "broken", map[string]any{"fail": true}, nil)
	g.Expect(c.Create(ctx, gadget)).To(Succeed())
	g.Eventually(conditionOf(c, gadget, kraanv1.ReleaseFailedCondition), 30*time.Second).Should(Equal("True/InstallError"))
	g.Expect(conditionOf(c, gadget, kraanv1.ReadyCondition)(g)).To(Equal("False/InstallError"))
	g.Expect(conditionOf(c, gadget, kraanv1.DeployedCondition)(g)).To(Equal("False/NotDeployed"))

	updateGadget(g, c, gadget, false, "spec", "fail")
	g.Eventually(conditionOf(c, gadget, kraanv1.ReadyCondition), 30*time.Second).Should(Equal("True/ReleaseSucceeded"))
	g.Expect(conditionOf(c, gadget, kraanv1.ReleaseFailedCondition)(g)).To(Equal("False/ReleaseSucceeded"))
}

func TestReconciler_Selector_ReconcilesOnlyMatchingObjects(t *testing.T) {
	g := NewWithT(t)
	c := startChartEnv(t, func(w *watches.Watch) {
		w.LabelSelector = labels.SelectorFromSet(labels.Set{"shard": "a"})
	})
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "shards")
	other := newGadget("shards", "other", map[string]any{"message": "b"}, nil)
	other.SetLabels(map[string]string{"shard": "b"})
	mine := newGadget("shards", "mine", map[string]any{"message": "a"}, nil)
	mine.SetLabels(map[string]string{"shard": "a"})
	g.Expect(c.Create(ctx, other)).To(Succeed())
	g.Expect(c.Create(ctx, mine)).To(Succeed())

	// The matching object is released; the other, created first, stays as
	// it was: no finalizer, no status, no release.
	g.Eventually(conditionOf(c, mine, kraanv1.ReadyCondition), 30*time.Second).Should(Equal("True/ReleaseSucceeded"))
	g.Consistently(func(g Gomega) {
		got := other.DeepCopy()
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(other), got)).To(Succeed())
		g.Expect(got.GetFinalizers()).To(BeEmpty())
		g.Expect(got.Object).NotTo(HaveKey("status"))
		err := c.Get(ctx, types.NamespacedName{Namespace: "shards", Name: "other-config"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the unselected Gadget was released")
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())

	// Labelling it into the selection releases it.
	g.Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
			return err
		}
		other.SetLabels(map[string]string{"shard": "a"})
		return c.Update(ctx, other)
	}, 30*time.Second).Should(Succeed())
	g.Eventually(conditionOf(c, other, kraanv1.ReadyCondition), 30*time.Second).Should(Equal("True/ReleaseSucceeded"))
}

func TestChartResult(t *testing.T) {
	failed := errors.New("install failed")
	tests := []struct {
		name    string
		err     error
		want    ctrl.Result
		wantErr error
	}{
		{name: "success waits for the reconcile period", want: ctrl.Result{RequeueAfter: time.Minute}},
		{name: "engine error backs off without a period", err: outcome.Transient(kraanv1.ReasonReconcileError, failed), wantErr: failed},
		{name: "values error waits for a new spec", err: outcome.Terminal(kraanv1.ReasonErrorGettingValues, failed)},
		{name: "a terminal error with a resync is looked at each period",
			err:  &outcome.TerminalError{Reason: kraanv1.ReasonErrorGettingValues, Err: failed, Resync: time.Minute},
			want: ctrl.Result{RequeueAfter: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := chartResult(&chartScope{period: time.Minute}, tt.err)
			g.Expect(got).To(Equal(tt.want))
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(tt.wantErr))
			}
		})
	}
}
