package addonslayer

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/testenv"
)

// testSecretsNeverLeak applies Secrets the API server rejects, each holding
// unique canary values, and searches every condition, event, log line and
// metric for them.
func (e *layerEnv) testSecretsNeverLeak(t *testing.T) {
	g := NewWithT(t)
	number := fmt.Sprintf("%d", 700000000000+rand.Int64N(99999999999))
	word := fmt.Sprintf("canary-%016x", rand.Uint64())
	encoded := base64.StdEncoding.EncodeToString([]byte("canary-b64-" + word))
	secrets := "" +
		// A number where a string is required: the typed patch fails.
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: a-typed\n  namespace: leaks\nstringData:\n  password: " + number + "\n  other: " + word + "\n" +
		"---\n" +
		// A key the API server refuses.
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: badkey\n  namespace: leaks\ndata:\n  \"bad key\": " + encoded + "\n"
	e.setSource(t, "leaks", map[string]string{"l/ns.yaml": namespaceYAML("leaks"), "l/secrets.yaml": secrets}, false)
	e.createLayer(t, "leaks", "leaks", "l")
	e.waitState(t, "leaks", kraanv1.FailedState)

	canaries := []string{number, word, encoded, "canary-b64-" + word}
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "leaks")
		for _, c := range l.Status.Conditions {
			expectNoCanary(g, "condition "+c.Type, c.Message, canaries)
		}
		events := &corev1.EventList{}
		g.Expect(e.c.List(context.Background(), events)).To(Succeed())
		n := 0
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == "leaks" {
				n++
			}
			expectNoCanary(g, "event "+ev.Reason, ev.Message, canaries)
		}
		g.Expect(n).To(BeNumerically(">", 0), "the failure was recorded as an event")
	}).Should(Succeed())
	expectNoCanary(g, "the operator's log", testenv.OperatorLog().String(), canaries)
	g.Expect(testenv.OperatorLog().String()).To(ContainSubstring("leaks"), "the log was captured")
	expectNoCanary(g, "/metrics", testenv.GatheredMetrics(t), canaries)
}

func expectNoCanary(g Gomega, where, text string, canaries []string) {
	g.Expect(testenv.CanaryLeak(text, canaries)).To(BeEmpty(), "%s holds a secret value", where)
}
