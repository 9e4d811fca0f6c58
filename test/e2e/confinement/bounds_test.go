package confinement_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

const (
	timeout = 90 * time.Second
	poll    = 250 * time.Millisecond
	// settle is how long nothing may appear after a refusal: the release
	// is retried with backoff meanwhile.
	settle = 5 * time.Second
)

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	NewWithT(t).Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

func newWidget(ns, name, note string) *unstructured.Unstructured {
	w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"note": note}}}
	w.SetAPIVersion("confinetest.kraan.io/v1")
	w.SetKind("Widget")
	w.SetNamespace(ns)
	w.SetName(name)
	return w
}

// conditionMessage returns "status/reason: message" of a condition of the
// chart-backed object obj.
func conditionMessage(obj client.Object, condType string) func(Gomega) string {
	return func(g Gomega) string {
		gvk, err := apiutil.GVKForObject(obj, testenv.Scheme)
		g.Expect(err).NotTo(HaveOccurred())
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(gvk)
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == condType {
				return m["status"].(string) + "/" + m["reason"].(string) + ": " + m["message"].(string)
			}
		}
		return ""
	}
}

// warningEvents returns the messages of the Warning events about obj.
func warningEvents(obj client.Object) func(Gomega) []string {
	return func(g Gomega) []string {
		events := &corev1.EventList{}
		g.Expect(k8s.List(context.Background(), events, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var out []string
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == obj.GetName() {
				out = append(out, e.Reason+": "+e.Message)
			}
		}
		return out
	}
}

// absent fails unless obj stays not found for settle.
func absent(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Consistently(func() error {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return &unexpected{kind: obj.GetObjectKind().GroupVersionKind().Kind, key: client.ObjectKeyFromObject(obj).String()}
		}
		return err
	}, settle, poll).Should(Succeed())
}

type unexpected struct{ kind, key string }

func (u *unexpected) Error() string { return u.kind + " " + u.key + " exists" }

const clusterAdminBinding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n" +
	"metadata:\n  name: pwned-%s\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n" +
	"subjects:\n  - kind: ServiceAccount\n    name: default\n    namespace: %s\n"

// TestWidget_InjectedObjectsAreRefused: the Widget chart prints spec.note
// unquoted, so a note can add documents to the release. Each attack fails the
// release with a condition and a Warning event naming the object, and
// nothing is created: not the injected object, not the Widget's own
// ConfigMap. The Widget runs as the operator: the bounds hold without
// impersonation.
func TestWidget_InjectedObjectsAreRefused(t *testing.T) {
	ns := namespace(t, "tenant-bounds")
	victims := namespace(t, "victims")
	for _, tc := range []struct {
		name, note, names string
		victim            client.Object
	}{{
		name:   "w-crb",
		note:   "x\n---\n" + fmt.Sprintf(clusterAdminBinding, "w-crb", ns),
		names:  "ClusterRoleBinding.rbac.authorization.k8s.io pwned-w-crb, which Widget tenant-bounds/w-crb may not create: its chart declares no ClusterRoleBinding",
		victim: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pwned-w-crb"}},
	}, {
		name:   "w-elsewhere",
		note:   "x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: planted\n  namespace: " + victims + "\ndata: {a: b}\n",
		names:  "ConfigMap victims/planted, which Widget tenant-bounds/w-elsewhere may not create: objects may only be created in its own namespace tenant-bounds",
		victim: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: victims, Name: "planted"}},
	}, {
		name:   "w-undeclared",
		note:   "x\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: planted\nstringData: {a: b}\n",
		names:  "Secret tenant-bounds/planted, which Widget tenant-bounds/w-undeclared may not create: its chart declares no Secret",
		victim: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "planted"}},
	}, {
		// Helm v3 never post-renders hooks: the kube client's guard refuses it.
		name: "w-hook",
		note: "x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooked\n  namespace: " + victims +
			"\n  annotations:\n    helm.sh/hook: pre-install\ndata: {a: b}\n",
		names:  "ConfigMap victims/hooked, which Widget tenant-bounds/w-hook may not create: objects may only be created in its own namespace tenant-bounds",
		victim: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: victims, Name: "hooked"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWidget(ns, tc.name, tc.note)
			g.Expect(k8s.Create(context.Background(), w)).To(Succeed())
			g.Eventually(conditionMessage(w, "ReleaseFailed"), timeout, poll).Should(
				And(HavePrefix("True/"), ContainSubstring(tc.names)))
			g.Eventually(warningEvents(w), timeout, poll).Should(ContainElement(ContainSubstring(tc.names)))
			absent(t, tc.victim)
			absent(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}})
		})
	}
}

// TestWidget_RefusedUpgradeKeepsTheDeployedRelease: an injection in the spec
// of a deployed Widget fails the upgrade and leaves the deployed ConfigMap as
// it was.
func TestWidget_RefusedUpgradeKeepsTheDeployedRelease(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "tenant-upgrade")
	w := newWidget(ns, "w", "first")
	g.Expect(k8s.Create(context.Background(), w)).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		return cm.Data
	}, timeout, poll).Should(Equal(map[string]string{"note": "first"}))

	g.Eventually(func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		_ = unstructured.SetNestedField(w.Object, "second\n---\n"+fmt.Sprintf(clusterAdminBinding, "upgrade", ns), "spec", "note")
		return k8s.Update(context.Background(), w)
	}, timeout, poll).Should(Succeed())
	g.Eventually(conditionMessage(w, "ReleaseFailed"), timeout, poll).Should(
		And(HavePrefix("True/UpgradeError: "), ContainSubstring("ClusterRoleBinding.rbac.authorization.k8s.io pwned-upgrade")))
	absent(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pwned-upgrade"}})
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"note": "first"}))
	g.Expect(conditionMessage(w, "Deployed")(g)).To(HavePrefix("True/"))
}
