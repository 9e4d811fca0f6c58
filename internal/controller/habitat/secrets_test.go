package habitat

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestReconciler_SecretsGateReady: a Habitat naming a ring key Secret that
// does not exist, and a user.toml Secret without its key, is not Ready and
// says which Secret and key; it turns Ready as soon as they are fixed, by
// the watch on Secrets alone.
func TestReconciler_SecretsGateReady(t *testing.T) {
	g := NewWithT(t)
	c := startHabitatEnv(t)
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "keys")
	config := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "keys", Name: "redis-config"},
		Data: map[string][]byte{"wrong.toml": []byte("port = 6379")}}
	g.Expect(c.Create(ctx, config)).To(Succeed())
	h := newHabitat("keys", "redis", "", 1)
	h.Spec.Service.RingSecretName = "prod-20260101000000"
	h.Spec.Service.ConfigSecretName = "redis-config"
	g.Expect(c.Create(ctx, h)).To(Succeed())

	ready := func(g Gomega) *metav1.Condition {
		got := &habitatv1.Habitat{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
		r := apimeta.FindStatusCondition(got.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(r).NotTo(BeNil())
		return r
	}
	g.Eventually(func(g Gomega) {
		r := ready(g)
		g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(r.Reason).To(Equal(habitatv1.ReasonSecretNotFound))
		g.Expect(r.Message).To(ContainSubstring(`Secret prod-20260101000000 (spec.service.ringSecretName) does not exist; it must hold key "ring-key"`))
		g.Expect(r.Message).To(ContainSubstring(`Secret redis-config (spec.service.configSecretName) has no key "user.toml"`))
	}, habitatTimeout).Should(Succeed())
	// The chart-backed reconciler does not undo it: its summary counts SecretsReady.
	g.Consistently(func(g Gomega) { g.Expect(ready(g).Status).To(Equal(metav1.ConditionFalse)) }, "2s").Should(Succeed())
	events := &corev1.EventList{}
	g.Expect(c.List(ctx, events, client.InNamespace("keys"))).To(Succeed())
	g.Expect(events.Items).To(ContainElement(HaveField("Reason", habitatv1.ReasonSecretNotFound)))

	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "keys", Name: "prod-20260101000000"},
		Data: map[string][]byte{"ring-key": []byte("SYM-SEC-1\nprod-20260101000000\n\nkey")}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		r := ready(g)
		g.Expect(r.Reason).To(Equal(habitatv1.ReasonSecretKeyMissing))
		g.Expect(r.Message).NotTo(ContainSubstring("prod-20260101000000"))
	}, habitatTimeout).Should(Succeed())

	config.Data = map[string][]byte{"user.toml": []byte("port = 6379")}
	g.Expect(c.Update(ctx, config)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(ready(g).Status).To(Equal(metav1.ConditionTrue)) }, habitatTimeout).Should(Succeed())
}

// TestReconciler_SecretContentsNeverLeak: the ring key and user.toml of a
// Habitat that fails on its Secrets (the ring key under the wrong key) never
// reach a condition, an event or the operator's debug log.
func TestReconciler_SecretContentsNeverLeak(t *testing.T) {
	g := NewWithT(t)
	c := startHabitatEnv(t)
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "canaries")
	ringKey := fmt.Sprintf("SYM-SEC-1\nprod-1\n\ncanary-ring-%016x", rand.Uint64())
	userTOML := fmt.Sprintf("password = \"canary-toml-%016x\"", rand.Uint64())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "canaries", Name: "prod-20260101000000"},
		Data: map[string][]byte{"wrong-key": []byte(ringKey)}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "canaries", Name: "config"},
		Data: map[string][]byte{"user.toml": []byte(userTOML)}})).To(Succeed())
	h := newHabitat("canaries", "redis", "", 1)
	h.Spec.Service.RingSecretName = "prod-20260101000000"
	h.Spec.Service.ConfigSecretName = "config"
	g.Expect(c.Create(ctx, h)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &habitatv1.Habitat{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
		r := apimeta.FindStatusCondition(got.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Reason).To(Equal(habitatv1.ReasonSecretKeyMissing))
	}, habitatTimeout).Should(Succeed())

	canaries := []string{"canary-ring-", "canary-toml-"}
	got := &habitatv1.Habitat{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
	for _, cond := range got.Status.Conditions {
		g.Expect(testenv.CanaryLeak(cond.Message, canaries)).To(BeEmpty(), "condition %s", cond.Type)
	}
	events := &corev1.EventList{}
	g.Expect(c.List(ctx, events, client.InNamespace("canaries"))).To(Succeed())
	g.Expect(events.Items).NotTo(BeEmpty())
	for _, ev := range events.Items {
		g.Expect(testenv.CanaryLeak(ev.Message, canaries)).To(BeEmpty(), "event %s", ev.Reason)
	}
	log := testenv.OperatorLog().String()
	g.Expect(log).To(ContainSubstring("canaries"), "the operator's log was captured")
	g.Expect(testenv.CanaryLeak(log, canaries)).To(BeEmpty(), "the operator's debug log")
}

// TestReconciler_FailedPassStillReportsSecrets: a pass whose ring key cannot
// be created (the API server refuses the Secret) still writes what it
// checked, so the user sees the missing Secret, not an old status; the
// fields it could not observe (the ring key Secret) keep what they said.
func TestReconciler_FailedPassStillReportsSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	testenv.CreateNamespace(t, env.Client, "keys")
	h := newHabitat("keys", "redis", "prod", 1)
	h.Spec.Service.GenerateRingKey = true
	h.Spec.Service.ConfigSecretName = "absent"
	g.Expect(env.Client.Create(ctx, h)).To(Succeed())

	refused := errors.New("secrets are refused in this test")
	watching, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme(), Mapper: env.Client.RESTMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	failingCreates := interceptor.NewClient(watching, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return refused
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	r := &Reconciler{Client: failingCreates, Group: env.Client, APIReader: env.Client}
	_, err = kit.Reconcile[*habitatScope](ctx, r, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(h)})
	g.Expect(err).To(MatchError(refused))

	got := &habitatv1.Habitat{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
	secrets := apimeta.FindStatusCondition(got.Status.Conditions, habitatv1.SecretsReadyCondition)
	g.Expect(secrets).NotTo(BeNil(), "a failed pass wrote nothing")
	g.Expect(secrets.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(secrets.Reason).To(Equal(habitatv1.ReasonSecretNotFound))
	g.Expect(got.Status.RingKeySecretName).To(BeEmpty(), "a ring key that was not made is reported")
}
