package addonslayer

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// leakShape is one way of writing a Secret the API server refuses: each is a
// layer of its own, since a layer reports the first object that fails.
type leakShape struct {
	// name is the layer's, the Secret's and the source directory's.
	name string
	// body is the Secret's data or stringData, in YAML, holding canaries.
	body string
	// field is the path the layer's message must name.
	field string
}

// testSecretsNeverLeak applies Secrets the API server rejects, each holding
// unique canary values in a shape of its own (a number, a map, a list, nested
// maps, base64 of each, a bad key), and searches every condition, event, log
// line and metric for them. Each layer's message names the Secret and the
// field, so the user can fix it.
func (e *layerEnv) testSecretsNeverLeak(t *testing.T) {
	g := NewWithT(t)
	canary := func(what string) string { return fmt.Sprintf("canary-%s-%016x", what, rand.Uint64()) }
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	number := fmt.Sprintf("%d", 700000000000+rand.Int64N(99999999999))
	word, mapped, listed, deep := canary("word"), canary("map"), canary("list"), canary("deep")
	b64map, b64list, b64deep := canary("b64map"), canary("b64list"), canary("b64deep")
	keyed := "canary-b64-" + word
	shapes := []leakShape{
		// A number where a string is required: the typed patch fails.
		{"leak-number", "stringData:\n  password: " + number + "\n  other: " + word + "\n", "stringData.password"},
		// An unquoted JSON object: YAML reads a map.
		{"leak-map", "stringData:\n  password: {\"password\": \"" + mapped + "\"}\n", "stringData.password"},
		{"leak-list", "stringData:\n  password: [\"" + listed + "\", 42]\n", "stringData.password"},
		{"leak-nested", "stringData:\n  password: {\"a\": {\"b\": [{\"c\": \"" + deep + "\"}]}}\n", "stringData.password"},
		// base64 of each shape, written where data wants one string.
		{"leak-b64map", "data:\n  password: {\"v\": \"" + b64(b64map) + "\"}\n", "data.password"},
		{"leak-b64list", "data:\n  password: [\"" + b64(b64list) + "\"]\n", "data.password"},
		{"leak-b64deep", "data:\n  password: {\"a\": {\"b\": \"" + b64(`{"c":"`+b64deep+`"}`) + "\"}}\n", "data.password"},
		// A key the API server refuses.
		{"leak-badkey", "data:\n  \"bad key\": " + b64(keyed) + "\n", "data[bad key]"},
	}
	files := map[string]string{}
	for _, s := range shapes {
		files[s.name+"/secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + s.name +
			"\n  namespace: leaks\n" + s.body
	}
	g.Expect(e.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaks"}})).To(Succeed())
	e.setSource(t, "leaks", files, false)
	for _, s := range shapes {
		e.createLayer(t, s.name, "leaks", s.name)
	}
	canaries := []string{number, word, mapped, listed, deep, b64map, b64list, b64deep, keyed,
		b64(b64map), b64(b64list), b64(keyed)}
	for _, s := range shapes {
		e.waitState(t, s.name, kraanv1.FailedState)
	}
	g.Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(e.c.List(context.Background(), events)).To(Succeed())
		recorded := map[string]bool{}
		for _, ev := range events.Items {
			recorded[ev.InvolvedObject.Name] = true
			expectNoCanary(g, "event "+ev.Reason, ev.Message, canaries)
		}
		for _, s := range shapes {
			g.Expect(recorded).To(HaveKey(s.name), "the failure was recorded as an event")
			for _, c := range e.layer(g, s.name).Status.Conditions {
				expectNoCanary(g, s.name+" condition "+c.Type, c.Message, canaries)
			}
		}
	}).Should(Succeed())
	expectNoCanary(g, "the operator's log", testenv.OperatorLog().String(), canaries)
	g.Expect(testenv.OperatorLog().String()).To(ContainSubstring("leak-map"), "the log was captured")
	expectNoCanary(g, "/metrics", testenv.GatheredMetrics(t), canaries)
	for _, s := range shapes {
		msg := layerReadyMessage(e.layer(g, s.name))
		t.Logf("%s: %s", s.name, msg)
		g.Expect(msg).To(And(ContainSubstring("Secret leaks/"+s.name), ContainSubstring(s.field)),
			"the message names the Secret and the field")
	}
}

func expectNoCanary(g Gomega, where, text string, canaries []string) {
	g.Expect(testenv.CanaryLeak(text, canaries)).To(BeEmpty(), "%s holds a secret value", where)
}
