package helmreleases_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/redact"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestHelmRelease_SecretValuesNeverLeak feeds a chart, through valuesFrom
// Secrets, a canary value the API server rejects and quotes back (an invalid
// nodeSelector label value), drives the release to failure, then searches
// every condition, event, the operator's debug log and its metrics for the
// canaries.
func TestHelmRelease_SecretValuesNeverLeak(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	rejected := fmt.Sprintf("canary-%016x not a label!", rand.Uint64())
	token := fmt.Sprintf("canary-token-%016x", rand.Uint64())
	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "values", Namespace: ns},
		StringData: map[string]string{
			"values.yaml": fmt.Sprintf("nodeSelector:\n  disk: %q\n", rejected),
			"token":       token,
		},
	})).To(Succeed())
	newRelease(t, ns, "leaky", "small", withVersion("0.1.0"), func(hr *kraanv1.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Second}
		hr.Spec.ValuesFrom = []kraanv1.ValuesReference{
			{Kind: "Secret", Name: "values"},
			{Kind: "Secret", Name: "values", ValuesKey: "token", TargetPath: "message"},
		}
	})

	var failure string
	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "leaky")
		released := condition(hr, kraanv1.ReleasedCondition)
		g.Expect(released).NotTo(BeNil())
		g.Expect(released.Reason).To(Equal(kraanv1.ReasonInstallFailed))
		g.Expect(condition(hr, kraanv1.StalledCondition)).NotTo(BeNil())
		failure = released.Message
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// The API server quoted the value; the operator masked it.
	g.Expect(failure).To(And(ContainSubstring("nodeSelector"), ContainSubstring(redact.Mask)), failure)

	expectNoCanaryAnywhere(t, ns, "leaky", []string{rejected, "canary-", token})
}

// TestHelmRelease_MalformedSecretValuesNeverLeak feeds a chart, through a
// valuesFrom Secret, values of every shape the API server (or Helm) refuses
// where the chart wants a string (a nodeSelector label value): a map, a list,
// a number, nested maps, a string holding JSON, and base64 of each. Each
// shape is a release of its own, driven to failure; no canary may reach a
// condition, an event, the operator's debug log or its metrics.
func TestHelmRelease_MalformedSecretValuesNeverLeak(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	canary := func(what string) string { return fmt.Sprintf("canary-%s-%016x", what, rand.Uint64()) }
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	number := fmt.Sprintf("%d", 700000000000+rand.Int64N(99999999999))
	mapped, listed, deep, inJSON := canary("map"), canary("list"), canary("deep"), canary("json")
	b64map, b64list, b64deep := canary("b64map"), canary("b64list"), canary("b64deep")
	disk := map[string]string{
		"map":     `{password: ` + mapped + `}`,
		"list":    `[` + listed + `, 42]`,
		"number":  number,
		"nested":  `{a: {b: [{c: ` + deep + `}]}}`,
		"json":    `'{"a":{"b":"` + inJSON + ` not a label!"}}'`,
		"b64map":  b64(`{"password":"` + b64map + `"}`),
		"b64list": b64(`["` + b64list + `"]`),
		"b64deep": b64(`{"a":{"b":"` + b64(b64deep) + `"}}`),
	}
	canaries := []string{number, mapped, listed, deep, inJSON, b64map, b64list, b64deep, b64(b64deep), "canary-"}
	for shape, value := range disk {
		g.Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "values-" + shape, Namespace: ns},
			StringData: map[string]string{"values.yaml": "nodeSelector:\n  disk: " + value + "\n"},
		})).To(Succeed())
		newRelease(t, ns, "leaky-"+shape, "small", withVersion("0.1.0"), func(hr *kraanv1.HelmRelease) {
			hr.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Second}
			hr.Spec.ValuesFrom = []kraanv1.ValuesReference{{Kind: "Secret", Name: "values-" + shape}}
		})
	}
	for shape := range disk {
		// The chart's values schema refuses some shapes (ValuesError), the
		// API server the others (InstallFailed, then RetriesExceeded).
		g.Eventually(func(g Gomega) {
			stalled := condition(get(g, ns, "leaky-"+shape), kraanv1.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), shape)
	}
	for shape := range disk {
		expectNoCanaryAnywhere(t, ns, "leaky-"+shape, canaries)
	}
}

// TestHelmRelease_RepositoryCredentialsNeverLeak: a HelmRepository whose
// Secret holds a wrong password fails with a condition that says the
// credentials were refused, names the repository and the failing step, never
// the username,
// the password or the Authorization header made of them.
func TestHelmRelease_RepositoryCredentialsNeverLeak(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	repo := chartrepo.NewHTTPRepo(t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0")
	repo.RequireBasicAuth("kraan", "the-right-password")
	user := fmt.Sprintf("canary-user-%016x", rand.Uint64())
	password := fmt.Sprintf("canary-password-%016x", rand.Uint64())
	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "repo-auth", Namespace: ns},
		StringData: map[string]string{"username": user, "password": password},
	})).To(Succeed())
	helmRepo := newHelmRepository(ns, "charts", repo.URL)
	helmRepo.Spec.SecretRef = &fluxmeta.LocalObjectReference{Name: "repo-auth"}
	g.Expect(k8s.Create(ctx, helmRepo)).To(Succeed())
	newRelease(t, ns, "private", "small", withVersion("0.1.0"))

	g.Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "private"), kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(And(
			ContainSubstring("HelmRepository "+ns+"/charts: "),
			ContainSubstring("fetching index: 401 Unauthorized"),
			ContainSubstring("refused the credentials")), ready.Message)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	expectNoCanaryAnywhere(t, ns, "private", []string{user, password, basic, "canary-"})
}

// expectNoCanaryAnywhere searches every condition of the release, every event
// of its namespace, the operator's debug log and /metrics for the canaries.
func expectNoCanaryAnywhere(t *testing.T, ns, release string, canaries []string) {
	t.Helper()
	g := NewWithT(t)
	for _, c := range get(g, ns, release).Status.Conditions {
		expectNoCanary(t, "condition "+c.Type, c.Message, canaries)
	}
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	g.Expect(events.Items).NotTo(BeEmpty())
	for _, ev := range events.Items {
		expectNoCanary(t, "event "+ev.Reason, ev.Message, canaries)
	}
	g.Expect(suite.OperatorLog.String()).To(ContainSubstring(release), "the operator's log was captured")
	expectNoCanary(t, "the operator's debug log", suite.OperatorLog.String(), canaries)
	expectNoCanary(t, "/metrics", testenv.GatheredMetrics(t), canaries)
}

func expectNoCanary(t *testing.T, where, text string, canaries []string) {
	t.Helper()
	if leak := testenv.CanaryLeak(text, canaries); leak != "" {
		t.Errorf("%s holds a secret value: %s", where, leak)
	}
}
