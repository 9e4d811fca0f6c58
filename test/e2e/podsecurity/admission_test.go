package podsecurity_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// enforceLabel makes PodSecurity admission reject Pods that break the level.
// Deployments are not rejected, only warned about: with no warn label, the
// warn level defaults to the enforce level.
const enforceLabel = "pod-security.kubernetes.io/enforce"

// rolloutTimeout bounds a Deployment's rollout on kwok's node, which takes
// seconds; generous for a loaded two-core machine.
const rolloutTimeout = 2 * time.Minute

// TestDeployment_AdmittedUnderRestricted creates each source's Deployment in
// a namespace enforcing the restricted Pod Security Standard and requires:
// a Pod of its template passes admission (server-side dry run, where enforce
// applies), neither request draws a warning (PodSecurity's warn level speaks
// on the Deployment), and the Deployment rolls out, so the Pods the
// ReplicaSet controller creates were admitted too.
func TestDeployment_AdmittedUnderRestricted(t *testing.T) {
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			g := NewWithT(t)
			deps := src.render(t)
			g.Expect(deps).NotTo(BeEmpty(), "the source renders no Deployment")
			for i := range deps {
				dep := &deps[i]
				ns := restrictedNamespace(t, src.nsPrefix)
				got := admit(t, ns, dep)
				g.Expect(got.podErr).NotTo(HaveOccurred(), "a Pod of Deployment %s's template", dep.Name)
				g.Expect(got.deploymentErr).NotTo(HaveOccurred(), "Deployment %s", dep.Name)
				g.Expect(got.warnings).To(BeEmpty(), "the API server warned about Deployment %s or its Pod", dep.Name)
				expectAvailable(t, ns, dep.Name)
			}
		})
	}
}

// TestDeployment_LoosenedIsRefused proves the checks above can fail: the
// Deployment of config/default, with one restricted setting removed from the
// manager the way a careless edit would, is refused at each of them.
func TestDeployment_LoosenedIsRefused(t *testing.T) {
	base := kustomizeDeployments(t, "config/default")
	NewWithT(t).Expect(base).To(HaveLen(1))
	tests := []struct {
		name string
		// loosen removes the setting from the pod and every container.
		loosen func(*corev1.PodSpec)
		// field is what PodSecurity's message names.
		field string
	}{
		{name: "runAsNonRoot removed", field: "securityContext.runAsNonRoot", loosen: func(s *corev1.PodSpec) {
			s.SecurityContext.RunAsNonRoot = nil
			forContainers(s, func(c *corev1.SecurityContext) { c.RunAsNonRoot = nil })
		}},
		{name: "allowPrivilegeEscalation removed", field: "securityContext.allowPrivilegeEscalation", loosen: func(s *corev1.PodSpec) {
			forContainers(s, func(c *corev1.SecurityContext) { c.AllowPrivilegeEscalation = nil })
		}},
		{name: "capabilities not dropped", field: "securityContext.capabilities.drop", loosen: func(s *corev1.PodSpec) {
			forContainers(s, func(c *corev1.SecurityContext) { c.Capabilities = nil })
		}},
		{name: "seccomp profile removed", field: "securityContext.seccompProfile", loosen: func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = nil
			forContainers(s, func(c *corev1.SecurityContext) { c.SeccompProfile = nil })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dep := base[0].DeepCopy()
			tt.loosen(&dep.Spec.Template.Spec)
			ns := restrictedNamespace(t, "psa-loose")
			got := admit(t, ns, dep)
			g.Expect(got.podErr).To(MatchError(And(ContainSubstring(`violates PodSecurity "restricted:latest"`), ContainSubstring(tt.field))),
				"enforce refuses the Pod")
			g.Expect(got.deploymentErr).NotTo(HaveOccurred(), "enforce does not apply to Deployments")
			g.Expect(got.warnings).To(ContainElement(And(ContainSubstring("would violate PodSecurity"), ContainSubstring(tt.field))),
				"the warning handler sees PodSecurity's warning on the Deployment")
			expectPodsRefused(t, ns)
		})
	}
}

// forContainers calls f with the security context of every container.
func forContainers(s *corev1.PodSpec, f func(*corev1.SecurityContext)) {
	for i := range s.Containers {
		if s.Containers[i].SecurityContext != nil {
			f(s.Containers[i].SecurityContext)
		}
	}
}

var namespaceCounter atomic.Int32

// restrictedNamespace creates a namespace of the test's own that enforces the
// restricted standard at the server's version ("latest" by default), and on
// failure logs what the test left in it.
func restrictedNamespace(t *testing.T, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, namespaceCounter.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{enforceLabel: "restricted"}}}
	NewWithT(t).Expect(k8s.Create(t.Context(), ns)).To(Succeed())
	t.Cleanup(func() {
		if t.Failed() {
			suite.DumpNamespace(t, k8s, name)
		}
	})
	return name
}

// admission is what the API server answered for a Deployment and a Pod of
// its template.
type admission struct {
	podErr        error    // the Pod's server-side dry run: PodSecurity enforce
	deploymentErr error    // creating the Deployment
	warnings      []string // every warning of both requests: PodSecurity warn
}

// admit creates the Deployment's ServiceAccount (the ServiceAccount admission
// plugin refuses Pods naming a missing one), then, through a client that
// records warnings, a Pod of the template with a server-side dry run, and
// the Deployment itself, in ns.
func admit(t *testing.T, ns string, dep *appsv1.Deployment) admission {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	tmpl := dep.Spec.Template
	if sa := tmpl.Spec.ServiceAccountName; sa != "" {
		err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
		g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
	c, recorded := warningClient(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Name + "-dry-run", Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	var got admission
	got.podErr = c.Create(ctx, pod, client.DryRunAll)
	if got.podErr != nil {
		// Only a refusal by admission may make this test pass or fail on
		// the manifests; anything else is a broken test.
		g.Expect(apierrors.IsForbidden(got.podErr)).To(BeTrue(), "dry run of a Pod: %v", got.podErr)
	}
	dep = dep.DeepCopy()
	dep.Namespace = ns
	got.deploymentErr = c.Create(ctx, dep)
	got.warnings = recorded.all()
	return got
}

// warnings records the warnings the API server sends in Warning headers,
// where PodSecurity's warn and audit-annotate levels report on Deployments.
type warnings struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warnings) HandleWarningHeader(_ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// warningClient returns an admin client whose every warning is recorded in
// the returned warnings (and nowhere else).
func warningClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	c := rest.CopyConfig(cfg)
	c.WarningHandler, c.WarningHandlerWithContext = w, nil
	cl, err := client.New(c, client.Options{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return cl, w
}

// expectAvailable waits until every replica of Deployment name in ns is
// available: kube-controller-manager created its Pods through the same
// admission and kwok runs them.
func expectAvailable(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(dep.Status.ObservedGeneration).To(Equal(dep.Generation))
		g.Expect(dep.Spec.Replicas).NotTo(BeNil())
		g.Expect(dep.Status.AvailableReplicas).To(Equal(*dep.Spec.Replicas), "conditions %+v", dep.Status.Conditions)
	}).WithTimeout(rolloutTimeout).WithPolling(time.Second).Should(Succeed(), "Deployment %s/%s rolls out", ns, name)
}

// expectPodsRefused waits until a ReplicaSet in ns reports that PodSecurity
// refused its Pods: what a loosened Deployment does on a real cluster.
func expectPodsRefused(t *testing.T, ns string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		rss := &appsv1.ReplicaSetList{}
		g.Expect(k8s.List(t.Context(), rss, client.InNamespace(ns))).To(Succeed())
		var messages []string
		for _, rs := range rss.Items {
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
					messages = append(messages, c.Message)
				}
			}
		}
		g.Expect(strings.Join(messages, "\n")).To(ContainSubstring("violates PodSecurity"))
	}).WithTimeout(rolloutTimeout).WithPolling(time.Second).Should(Succeed(), "the ReplicaSet's Pods are refused in %s", ns)
}
