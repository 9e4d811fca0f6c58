package namespaced_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	habitatctrl "github.com/kraan-io/kraan-operator/internal/controller/habitat"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

const (
	// timeout covers a StatefulSet of three rolling out on kwok.
	timeout = 90 * time.Second
	// leftAlone is how long an unwatched Habitat must stay untouched after
	// the watched ones, created with it, are fully reconciled.
	leftAlone = 10 * time.Second
	// managerRole is the generated ClusterRole holding the operator's rules.
	managerRole = "kraan-manager-role"
	// leaseName is the operator's leader election Lease (cmd/main.go).
	leaseName = "kraan-operator.kraan.io"
	// exampleFile holds the Habitats of the namespaced example.
	exampleFile = "docs/examples/habitat/namespaced/habitat.yaml"
)

// forbidden matches the API server's RBAC denials in the operator's log.
var forbidden = regexp.MustCompile(`(?i)forbidden`)

func TestOverlay_BindsManagerRoleOnlyInWatchedNamespaces(t *testing.T) {
	g := NewWithT(t)
	for _, crb := range overlay.ofKind("ClusterRoleBinding") {
		ref, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name")
		g.Expect(ref).NotTo(Equal(managerRole), "ClusterRoleBinding %s grants the operator's rules cluster-wide", crb.GetName())
	}
	var bound []string
	for _, rb := range overlay.ofKind("RoleBinding") {
		if ref, _, _ := unstructured.NestedString(rb.Object, "roleRef", "name"); ref == managerRole {
			bound = append(bound, rb.GetNamespace())
		}
	}
	g.Expect(bound).To(ConsistOf(overlay.watched),
		"the RoleBindings of %s and the Deployment's %s must list the same namespaces", managerRole, watchNamespaceFlag)
}

func TestOverlay_ServiceAccountMayOnlyUseWatchedNamespaces(t *testing.T) {
	cases := []struct {
		name      string
		namespace string
		resource  authorizationv1.ResourceAttributes
		allowed   bool
	}{
		{name: "habitats in a watched namespace", namespace: overlay.watched[0],
			resource: habitats("list"), allowed: true},
		{name: "statefulsets in a watched namespace", namespace: overlay.watched[len(overlay.watched)-1],
			resource: authorizationv1.ResourceAttributes{Group: "apps", Resource: "statefulsets", Verb: "create"}, allowed: true},
		{name: "habitats in an unwatched namespace", namespace: metav1.NamespaceDefault, resource: habitats("list")},
		{name: "habitats in every namespace", resource: habitats("list")},
		{name: "pods in every namespace", resource: authorizationv1.ResourceAttributes{Resource: "pods", Verb: "watch"}},
		{name: "addonslayers, cluster-scoped", resource: authorizationv1.ResourceAttributes{
			Group: "kraan.io", Resource: "addonslayers", Verb: "watch"}},
		{name: "addonslayers status", resource: authorizationv1.ResourceAttributes{
			Group: "kraan.io", Resource: "addonslayers", Subresource: "status", Verb: "patch"}},
		{name: "its Lease", namespace: overlay.deployment.Namespace, resource: authorizationv1.ResourceAttributes{
			Group: "coordination.k8s.io", Resource: "leases", Verb: "update"}, allowed: true},
		{name: "secrets of its own namespace", namespace: overlay.deployment.Namespace,
			resource: authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "list"}},
	}
	ns, name := overlay.serviceAccount()
	user := "system:serviceaccount:" + ns + ":" + name
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			attrs := tc.resource
			attrs.Namespace = tc.namespace
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               user,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &attrs,
			}}
			g.Expect(k8s.Create(context.Background(), sar)).To(Succeed())
			g.Expect(sar.Status.Allowed).To(Equal(tc.allowed), "%s %+v: %s", user, attrs, sar.Status.Reason)
		})
	}
}

func habitats(verb string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Group: habitatv1.GroupVersion.Group, Resource: "habitats", Verb: verb}
}

func TestOperator_HoldsItsLeaseInItsOwnNamespace(t *testing.T) {
	g := NewWithT(t)
	g.Expect(op.Ready(t.Context())).To(BeTrue(), "the operator's informers synced with the overlay's permissions")
	g.Eventually(func(g Gomega) string {
		lease := &coordinationv1.Lease{}
		g.Expect(k8s.Get(t.Context(), types.NamespacedName{Namespace: overlay.deployment.Namespace, Name: leaseName}, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		return *lease.Spec.HolderIdentity
	}, timeout).ShouldNot(BeEmpty())
}

func TestNamespacedExample_ReconcilesOnlyWatchedNamespaces(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	watched, unwatched := exampleHabitats(t)
	for _, h := range append(slices.Clone(watched), unwatched...) {
		g.Expect(k8s.Create(ctx, h.DeepCopy())).To(Succeed(), "%s/%s", h.Namespace, h.Name)
	}

	// Each watched Habitat: StatefulSet rolled out, its namespace's peer
	// list holds the pods' IPs, status reports them and Ready.
	for _, h := range watched {
		g.Eventually(func(g Gomega) { expectReconciled(g, h) }, timeout).Should(Succeed(), "%s/%s", h.Namespace, h.Name)
	}
	expectRingKeysPerNamespace(g, watched)

	// The unwatched Habitat stays exactly as created.
	for _, h := range unwatched {
		g.Consistently(func(g Gomega) { expectUntouched(g, h) }, leftAlone, time.Second).Should(Succeed(), "%s/%s", h.Namespace, h.Name)
	}

	// Delete all, as `kubectl delete -f`: the watched releases are
	// uninstalled with the operator's namespaced permissions.
	for _, h := range append(slices.Clone(watched), unwatched...) {
		g.Expect(k8s.Delete(ctx, h.DeepCopy())).To(Succeed())
	}
	for _, h := range watched {
		g.Eventually(func(g Gomega) { expectGone(g, h) }, timeout).Should(Succeed(), "%s/%s", h.Namespace, h.Name)
	}
	for _, ns := range overlay.watched {
		expectNoOperatorWarnings(t, ns)
	}
	g.Expect(forbidden.FindAllString(op.Log(), -1)).To(BeEmpty(),
		"the operator hit RBAC denials:\n%s", linesMatching(op.Log(), forbidden))
	g.Expect(op.Log()).To(ContainSubstring("AddonsLayer controller disabled"))
}

// exampleHabitats reads the namespaced example and splits its Habitats by
// whether the overlay watches their namespace; it needs some of each.
func exampleHabitats(t *testing.T) (watched, unwatched []*habitatv1.Habitat) {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, exampleFile))
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := ssautil.ReadObjects(bytes.NewReader(data))
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range objs {
		h := &habitatv1.Habitat{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, h)).To(Succeed())
		if slices.Contains(overlay.watched, h.Namespace) {
			watched = append(watched, h)
		} else {
			unwatched = append(unwatched, h)
		}
	}
	g.Expect(watched).NotTo(BeEmpty(), "%s has no Habitat in %v", exampleFile, overlay.watched)
	g.Expect(unwatched).NotTo(BeEmpty(), "%s has no Habitat outside %v", exampleFile, overlay.watched)
	return watched, unwatched
}

// expectReconciled checks what both halves of the hybrid API made for h.
func expectReconciled(g Gomega, h *habitatv1.Habitat) {
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(h), sts)).To(Succeed())
	g.Expect(sts.Status.ReadyReplicas).To(Equal(h.Spec.Count))
	ips := runningIPs(g, h)
	g.Expect(ips).To(HaveLen(int(h.Spec.Count)))
	cm := &corev1.ConfigMap{}
	cmKey := types.NamespacedName{Namespace: h.Namespace, Name: habitatctrl.PeerConfigMapName(habitatctrl.PeerGroup(h))}
	g.Expect(k8s.Get(ctx, cmKey, cm)).To(Succeed())
	g.Expect(cm.Data[habitatctrl.PeerWatchFileKey]).To(Equal(strings.Join(ips, "\n")))
	got := &habitatv1.Habitat{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
	g.Expect(got.Status.Peers).To(Equal(ips))
	g.Expect(got.Status.ReadyReplicas).To(Equal(h.Spec.Count))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, kraanv1.ReadyCondition)).To(BeTrue(), "Ready: %+v", got.Status.Conditions)
	if h.Spec.Service.GenerateRingKey {
		g.Expect(got.Status.RingKeySecretName).To(Equal(habitatctrl.GeneratedRingKeySecretName(h.Spec.Service.Ring)))
	}
}

// expectRingKeysPerNamespace checks that Habitats of one ring name in
// different namespaces got different generated keys.
func expectRingKeysPerNamespace(g Gomega, watched []*habitatv1.Habitat) {
	keys := map[string]string{}
	for _, h := range watched {
		if !h.Spec.Service.GenerateRingKey {
			continue
		}
		secret := &corev1.Secret{}
		key := types.NamespacedName{Namespace: h.Namespace, Name: habitatctrl.GeneratedRingKeySecretName(h.Spec.Service.Ring)}
		g.Expect(k8s.Get(context.Background(), key, secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveLen(1))
		for _, v := range secret.Data {
			keys[h.Namespace] = string(v)
		}
	}
	g.Expect(keys).To(HaveLen(len(overlay.watched)), "the example generates a ring key in every watched namespace")
	seen := map[string]bool{}
	for ns, k := range keys {
		g.Expect(seen[k]).To(BeFalse(), "namespace %s shares a ring key with another namespace", ns)
		seen[k] = true
	}
}

// expectUntouched checks that the operator left h as it was created: no
// finalizer, no status, and nothing rendered or written for it.
func expectUntouched(g Gomega, h *habitatv1.Habitat) {
	ctx := context.Background()
	got := &habitatv1.Habitat{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
	g.Expect(got.Finalizers).To(BeEmpty())
	g.Expect(got.Status).To(Equal(habitatv1.HabitatStatus{}))
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(h), &appsv1.StatefulSet{}))).To(BeTrue(), "a StatefulSet")
	cmKey := types.NamespacedName{Namespace: h.Namespace, Name: habitatctrl.PeerConfigMapName(habitatctrl.PeerGroup(h))}
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, cmKey, &corev1.ConfigMap{}))).To(BeTrue(), "a peer list")
	releases := &corev1.SecretList{}
	g.Expect(k8s.List(ctx, releases, client.InNamespace(h.Namespace), client.MatchingLabels{"owner": "helm", "name": h.Name})).To(Succeed())
	g.Expect(releases.Items).To(BeEmpty(), "a Helm release")
}

// expectGone checks that h, its StatefulSet, peer list and ring key are gone.
func expectGone(g Gomega, h *habitatv1.Habitat) {
	ctx := context.Background()
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(h), &habitatv1.Habitat{}))).To(BeTrue(), "the Habitat")
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(h), &appsv1.StatefulSet{}))).To(BeTrue(), "its StatefulSet")
	cmKey := types.NamespacedName{Namespace: h.Namespace, Name: habitatctrl.PeerConfigMapName(habitatctrl.PeerGroup(h))}
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, cmKey, &corev1.ConfigMap{}))).To(BeTrue(), "its peer list")
	if h.Spec.Service.GenerateRingKey {
		key := types.NamespacedName{Namespace: h.Namespace, Name: habitatctrl.GeneratedRingKeySecretName(h.Spec.Service.Ring)}
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &corev1.Secret{}))).To(BeTrue(), "its ring key")
	}
}

// runningIPs returns the sorted IPs of h's Running pods.
func runningIPs(g Gomega, h *habitatv1.Habitat) []string {
	pods := &corev1.PodList{}
	g.Expect(k8s.List(context.Background(), pods, client.InNamespace(h.Namespace),
		client.MatchingLabels{habitatctrl.HabitatLabel: h.Name})).To(Succeed())
	var ips []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			ips = append(ips, p.Status.PodIP)
		}
	}
	slices.Sort(ips)
	return ips
}

// expectNoOperatorWarnings fails on a Warning event the operator emitted or
// one about a Habitat: an RBAC gap shows as a failed release or write.
func expectNoOperatorWarnings(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	for _, e := range events.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		g.Expect(e.InvolvedObject.Kind == "Habitat" || e.ReportingController == "kraan-operator").To(BeFalse(),
			"Warning %s on %s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, ns, e.InvolvedObject.Name, e.Message)
	}
}

// linesMatching returns the lines of log re matches, for failure messages.
func linesMatching(log string, re *regexp.Regexp) string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if re.MatchString(line) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
