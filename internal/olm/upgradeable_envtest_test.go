package olm

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/crds"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestUpgradeableReconciler_FollowsLayerStates runs SetupUpgradeable against a
// real API server holding OLM's OperatorCondition CRD, as OLM would create it,
// and moves a layer through its states.
func TestUpgradeableReconciler_FollowsLayerStates(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{crds.OperatorCondition()},
	})
	g.Expect(err).NotTo(HaveOccurred())

	scheme := testenv.Scheme
	g.Expect(apiv2.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := t.Context()

	// OLM creates the OperatorCondition with the CSV, in the operator's namespace.
	key := types.NamespacedName{Namespace: "default", Name: "kraan-operator.v0.1.0"}
	oc := &apiv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	oc.Spec.Conditions = []metav1.Condition{{
		Type: "Other", Status: metav1.ConditionTrue, Reason: "SetByAnother", LastTransitionTime: metav1.Now(),
	}}
	g.Expect(c.Create(ctx, oc)).To(Succeed())
	t.Setenv(ConditionNameEnv, key.Name)

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(SetupUpgradeable(mgr, key.Namespace)).To(Succeed())
	mgrCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// With no layer at all the start-up event sets Upgradeable=True.
	expectUpgradeable(t, c, key, metav1.ConditionTrue, ReasonNoLayerInProgress)

	l := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: "base"},
		Spec: kraanv1.AddonsLayerSpec{
			Version: "0.1.0",
			Source:  kraanv1.SourceSpec{Name: "addons", Namespace: "default", Path: "./base"},
		},
	}
	g.Expect(c.Create(ctx, l)).To(Succeed())
	for _, step := range []struct {
		state  string
		status metav1.ConditionStatus
		reason string
	}{
		{kraanv1.ApplyingState, metav1.ConditionFalse, ReasonLayersInProgress},
		{kraanv1.DeployedState, metav1.ConditionTrue, ReasonNoLayerInProgress},
		{kraanv1.PruningState, metav1.ConditionFalse, ReasonLayersInProgress},
	} {
		l.Status.State = step.state
		g.Expect(c.Status().Update(ctx, l)).To(Succeed())
		expectUpgradeable(t, c, key, step.status, step.reason)
	}

	// Deleting the last busy layer makes the operator upgradeable again.
	g.Expect(c.Delete(ctx, l)).To(Succeed())
	expectUpgradeable(t, c, key, metav1.ConditionTrue, ReasonNoLayerInProgress)

	// A Helm action in flight (its release record pending) holds upgrades
	// until the record says it ended.
	rec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sh.helm.release.v1.web.v1",
		Labels: map[string]string{"owner": "helm", "name": "web", "version": "1", "status": "pending-install",
			"createdAt": strconv.FormatInt(time.Now().Unix(), 10)}}}
	g.Expect(c.Create(ctx, rec)).To(Succeed())
	expectUpgradeable(t, c, key, metav1.ConditionFalse, ReasonHelmActionsInProgress)
	rec.Labels["status"] = "deployed"
	g.Expect(c.Update(ctx, rec)).To(Succeed())
	expectUpgradeable(t, c, key, metav1.ConditionTrue, ReasonNoLayerInProgress)

	// The condition OLM or another party set is kept.
	g.Expect(c.Get(ctx, key, oc)).To(Succeed())
	g.Expect(meta.FindStatusCondition(oc.Spec.Conditions, "Other")).NotTo(BeNil())
}

func expectUpgradeable(t *testing.T, c client.Client, key types.NamespacedName, status metav1.ConditionStatus, reason string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		oc := &apiv2.OperatorCondition{}
		g.Expect(c.Get(t.Context(), key, oc)).To(Succeed())
		cond := meta.FindStatusCondition(oc.Spec.Conditions, apiv2.Upgradeable)
		g.Expect(cond).NotTo(BeNil(), "Upgradeable not set")
		g.Expect(cond.Status).To(Equal(status), cond.Message)
		g.Expect(cond.Reason).To(Equal(reason))
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}
