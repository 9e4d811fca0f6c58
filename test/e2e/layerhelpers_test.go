package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Helpers for the tests that drive one behaviour of a layer at a time
// (prerequisites, artifacts): a layer builder with options and assertions on
// what a user sees with kubectl — state, conditions, messages and events.

// layerTimeout bounds every wait for a layer to reach a state: generous for a
// machine shared with other test runs, and far above what a healthy run needs.
const layerTimeout = 2 * time.Minute

// layerOption changes a layer before it is created.
type layerOption func(*kraanv1.AddonsLayer)

func withDependsOn(items ...string) layerOption {
	return func(l *kraanv1.AddonsLayer) { l.Spec.Prereqs.DependsOn = items }
}

func withK8sVersion(v string) layerOption {
	return func(l *kraanv1.AddonsLayer) { l.Spec.Prereqs.K8sVersion = v }
}

// withOCISource reads the layer from the OCIRepository name.
func withOCISource(name string) layerOption {
	return func(l *kraanv1.AddonsLayer) {
		l.Spec.Source.Kind = kraanv1.OCIRepositoryKind
		l.Spec.Source.Name = name
	}
}

func withPath(p string) layerOption {
	return func(l *kraanv1.AddonsLayer) { l.Spec.Source.Path = p }
}

// addLayer creates layer name at version 0.1.0 reading ./addons/<name> from
// the GitRepository source. Its interval, which is also the grace period
// before pruning, is 5s so that "nothing was pruned" can be watched past it.
func (h *harness) addLayer(name, source string, opts ...layerOption) {
	l := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kraanv1.AddonsLayerSpec{
			Version:  "0.1.0",
			Source:   kraanv1.SourceSpec{Name: source, Namespace: fluxNamespace, Path: "./addons/" + name},
			Interval: metav1.Duration{Duration: 5 * time.Second},
			Timeout:  metav1.Duration{Duration: 2 * time.Minute},
		},
	}
	for _, o := range opts {
		o(l)
	}
	NewWithT(h.t).Expect(h.c.Create(h.t.Context(), l)).To(Succeed())
}

// updateLayer changes a layer's spec, retrying on conflicts.
func (h *harness) updateLayer(name string, change func(*kraanv1.AddonsLayer)) {
	NewWithT(h.t).Eventually(func(g Gomega) {
		l := h.layer(g, name)
		change(l)
		g.Expect(h.c.Update(h.t.Context(), l)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func (h *harness) layer(g Gomega, name string) *kraanv1.AddonsLayer {
	l := &kraanv1.AddonsLayer{}
	g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Name: name}, l)).To(Succeed())
	return l
}

// waitLayer waits until the layer is in state and check passes, and returns
// it. The failure message shows the layer's Ready condition.
func (h *harness) waitLayer(name, state string, check func(g Gomega, l *kraanv1.AddonsLayer)) *kraanv1.AddonsLayer {
	var got *kraanv1.AddonsLayer
	NewWithT(h.t).Eventually(func(g Gomega) {
		l := h.layer(g, name)
		g.Expect(l.Status.State).To(Equal(state), "layer %s: Ready %+v", name, cond(l, kraanv1.ReadyCondition))
		if check != nil {
			check(g, l)
		}
		got = l
	}).WithTimeout(layerTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	return got
}

// cond returns the layer's condition of type t, or a zero condition.
func cond(l *kraanv1.AddonsLayer, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(l.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// absent is the status of a condition the layer does not carry: Stalled and
// Reconciling are removed when false (kstatus' rule).
const absent metav1.ConditionStatus = ""

// expectConditions checks each condition type has the status given.
func expectConditions(g Gomega, l *kraanv1.AddonsLayer, want map[string]metav1.ConditionStatus) {
	for t, s := range want {
		g.Expect(cond(l, t).Status).To(Equal(s), "layer %s condition %s: %+v", l.Name, t, cond(l, t))
	}
}

// expectEvent waits for an event about the layer with this type and reason
// whose message contains text, as `kubectl events --for al/<name>` shows.
func (h *harness) expectEvent(name, eventType, reason, text string) {
	NewWithT(h.t).Eventually(func(g Gomega) []string {
		events := &corev1.EventList{}
		g.Expect(h.c.List(h.t.Context(), events)).To(Succeed())
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "AddonsLayer" && e.InvolvedObject.Name == name {
				seen = append(seen, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
			}
		}
		return seen
	}).WithTimeout(30*time.Second).Should(ContainElement(And(HavePrefix(eventType+" "+reason+": "), ContainSubstring(text))),
		"no %s event %s about layer %s", eventType, reason, name)
}

// configMapYAML is a ConfigMap whose data.value tells revisions apart.
func configMapYAML(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  value: %q\n---\n", name, ns, value)
}

// configMapValue returns data.value of a ConfigMap, or the Get error.
func (h *harness) configMapValue(ns, name string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return "", err
	}
	return cm.Data["value"], nil
}

// notFound reports whether obj (named by ns/name) does not exist.
func (h *harness) notFound(obj client.Object, ns, name string) bool {
	return apierrors.IsNotFound(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj))
}

// logReady logs the layer's state and Ready message: what `kubectl get al`
// shows, kept in the test output for whoever reads it.
func (h *harness) logReady(l *kraanv1.AddonsLayer) {
	h.t.Logf("layer %s is %s: %s", l.Name, l.Status.State, cond(l, kraanv1.ReadyCondition).Message)
}
