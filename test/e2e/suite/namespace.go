package suite

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

var namespaceCounter atomic.Int32

// NewNamespace creates a namespace of the test's own, named prefix and a
// number, with c. When the test fails, it logs what the test left there
// (DumpNamespace).
func NewNamespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, time.Now().Unix()%100000, namespaceCounter.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			DumpNamespace(t, c, name)
		}
	})
	return name
}

// DumpNamespace logs what explains a failed HelmRelease test in namespace
// ns: Helm storage, the HelmReleases' conditions, the events, and the
// ReplicaSets and pods Helm's wait looked at.
func DumpNamespace(t testing.TB, c client.Client, ns string) {
	t.Helper()
	ctx, in := context.Background(), client.InNamespace(ns)
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, in, client.MatchingLabels{"owner": "helm"}); err == nil {
		for _, s := range secrets.Items {
			t.Logf("Helm storage %s: status %s", s.Name, s.Labels["status"])
		}
	}
	hrs := &kraanv1.HelmReleaseList{}
	if err := c.List(ctx, hrs, in); err == nil {
		for _, hr := range hrs.Items {
			t.Logf("HelmRelease %s: generation %d observed %d conditions %+v",
				hr.Name, hr.Generation, hr.Status.ObservedGeneration, hr.Status.Conditions)
		}
	}
	events := &corev1.EventList{}
	if err := c.List(ctx, events, in); err == nil {
		for _, e := range events.Items {
			t.Logf("Event %s %s/%s %s: %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	rss := &appsv1.ReplicaSetList{}
	if err := c.List(ctx, rss, in); err == nil {
		for _, rs := range rss.Items {
			t.Logf("ReplicaSet %s: replicas %d ready %d observedGeneration %d/%d",
				rs.Name, rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.ObservedGeneration, rs.Generation)
		}
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, in); err == nil {
		for _, p := range pods.Items {
			t.Logf("Pod %s: phase %s node %q conditions %+v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
		}
	}
}
