package helmreleases_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// rotations is how many times TestHelmRelease_KubeconfigRotation changes the
// kubeconfig: enough that a leak of two watches per content stands out of
// the noise by far.
const rotations = 50

// Tolerances of the return to the baseline: goroutines the manager starts
// and ends on its own (event broadcasts, a work queue's timers, a Helm run
// ending), and watches of other clients of the plane (the controller
// manager's resyncs).
const (
	goroutineTolerance = 30
	watchTolerance     = 4
)

// TestHelmRelease_KubeconfigRotation: a HelmRelease whose kubeConfig Secret
// changes content 50 times (a token rotation; here the context's name) makes
// the operator build the clients of each new content, and stop those of the
// one it replaced: the goroutines of the operator and the watches open on the
// API server come back to where they were after the first content.
func TestHelmRelease_KubeconfigRotation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rotated"},
		Data:       map[string][]byte{"value": rotatedKubeconfig(t, cfg, 0)},
	}
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	newRelease(t, ns, "rotated", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.KubeConfig = &kraanv1.KubeConfigReference{SecretRef: &kraanv1.SecretKeyReference{Name: "rotated"}}
	})
	readyAt(t, ns, "rotated")
	// The install's rollout informers stop 10 s after its wait: the baseline
	// is taken once the count has settled.
	goroutines := settled(t, runtime.NumGoroutine)
	watches, byResource := steadyWatches(t)
	t.Logf("Baseline: %d goroutines, %d watches", goroutines, watches)

	for i := 1; i <= rotations; i++ {
		secret.Data["value"] = rotatedKubeconfig(t, cfg, i)
		g.Expect(k8s.Update(ctx, secret)).To(Succeed())
		handledRequest(t, ns, "rotated", fmt.Sprint("rotation-", i))
	}
	t.Logf("After %d rotations: %d goroutines, %d watches, changed by resource: %v",
		rotations, runtime.NumGoroutine(), openWatches(g), changed(byResource, watchesByResource(g)))
	defer func() {
		t.Logf("At the end: watches changed by resource: %v", changed(byResource, watchesByResource(g)))
	}()
	g.Eventually(runtime.NumGoroutine).WithTimeout(timeout).WithPolling(time.Second).
		Should(BeNumerically("<=", goroutines+goroutineTolerance), "the operator's goroutines come back to the baseline")
	g.Eventually(func() int { return openWatches(g) }).WithTimeout(timeout).WithPolling(time.Second).
		Should(BeNumerically("<=", watches+watchTolerance), "the watches on the API server come back to the baseline")
	readyAt(t, ns, "rotated")
}

// settled is what count says once it stopped falling for 10 s (no more
// informers idling out).
func settled(t *testing.T, count func() int) int {
	t.Helper()
	last, since := count(), time.Now()
	NewWithT(t).Eventually(func() bool {
		if n := count(); n < last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 12*time.Second
	}).WithTimeout(timeout).WithPolling(time.Second).Should(BeTrue())
	return last
}

// steadyWatches is the most watches the API server served over 5 s, and
// by resource then: the plane's components end and open watches again now
// and then, so one sample may catch a few of them between two.
func steadyWatches(t *testing.T) (int, map[string]int) {
	t.Helper()
	most, byResource, start := 0, map[string]int{}, time.Now()
	NewWithT(t).Eventually(func(g Gomega) bool {
		if now := watchesByResource(g); sum(now) > most {
			most, byResource = sum(now), now
		}
		return time.Since(start) > 5*time.Second
	}).WithTimeout(timeout).WithPolling(500 * time.Millisecond).Should(BeTrue())
	return most, byResource
}

func sum(counts map[string]int) int {
	total := 0
	for _, n := range counts {
		total += n
	}
	return total
}

// handledRequest asks for a reconcile with token and waits until the
// release says it handled it.
func handledRequest(t *testing.T, ns, name, token string) {
	t.Helper()
	annotate(t, ns, name, map[string]string{"reconcile.fluxcd.io/requestedAt": token})
	NewWithT(t).Eventually(func(g Gomega) {
		hr := get(g, ns, name)
		g.Expect(hr.Status.LastHandledReconcileAt).To(Equal(token))
		g.Expect(condition(hr, kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), token)
}

// rotatedKubeconfig is an inline kubeconfig for cfg whose bytes differ for
// each n, as a rotated token's would.
func rotatedKubeconfig(t *testing.T, cfg *rest.Config, n int) []byte {
	ca := cfg.CAData
	if len(ca) == 0 {
		var err error
		ca, err = os.ReadFile(cfg.CAFile)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
	name := "rotation-" + strconv.Itoa(n)
	data, err := clientcmd.Write(clientcmdapi.Config{
		CurrentContext: name,
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "plane", AuthInfo: "admin"}},
		Clusters:       map[string]*clientcmdapi.Cluster{"plane": {Server: cfg.Host, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"admin": {Token: cfg.BearerToken}},
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return data
}

// openWatches is how many watches the API server serves now
// (apiserver_longrunning_requests of verb WATCH).
func openWatches(g Gomega) int {
	return sum(watchesByResource(g))
}

// watchesByResource is how many watches the API server serves now, by
// resource.
func watchesByResource(g Gomega) map[string]int {
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	resource := regexp.MustCompile(`resource="([^"]*)"`)
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		g.Expect(err).NotTo(HaveOccurred(), line)
		name := ""
		if m := resource.FindStringSubmatch(line); m != nil {
			name = m[1]
		}
		out[name] += int(v)
	}
	return out
}

// changed lists the resources whose count differs between before and after.
func changed(before, after map[string]int) map[string]string {
	out := map[string]string{}
	for r, n := range after {
		if before[r] != n {
			out[r] = fmt.Sprintf("%d -> %d", before[r], n)
		}
	}
	for r, n := range before {
		if _, ok := after[r]; !ok {
			out[r] = fmt.Sprintf("%d -> 0", n)
		}
	}
	return out
}

// TestHelmRelease_DeletedWithoutItsKubeconfigSecret: a release of a remote
// cluster whose kubeConfig Secret is gone cannot be uninstalled; deleting the
// HelmRelease lets it go, as Flux does, and says the release was left
// installed, naming the Secret.
func TestHelmRelease_DeletedWithoutItsKubeconfigSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"},
		Data:       map[string][]byte{"value": rotatedKubeconfig(t, cfg, 0)},
	}
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	newRelease(t, ns, "remote", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.KubeConfig = &kraanv1.KubeConfigReference{SecretRef: &kraanv1.SecretKeyReference{Name: "gone"}}
	})
	readyAt(t, ns, "remote")

	g.Expect(k8s.Delete(ctx, secret)).To(Succeed())
	deleteRelease(t, ns, "remote")
	gone(t, ns, "remote")
	skipped(t, ns, "remote", "kubeConfig Secret "+ns+"/gone")
	g.Expect(configMapData(g, ns, "remote")).To(HaveKey("message"), "the release is left installed")
}

// TestHelmRelease_DeletedWithoutItsServiceAccount: a release uninstalled as
// a ServiceAccount (spec.serviceAccountName) that is gone, with its rights,
// cannot be uninstalled; deleting the HelmRelease lets it go and says so,
// naming the ServiceAccount.
func TestHelmRelease_DeletedWithoutItsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	sa, binding := newTenant(t, ns)
	newRelease(t, ns, "tenant", "small", func(hr *kraanv1.HelmRelease) { hr.Spec.ServiceAccountName = sa.Name })
	readyAt(t, ns, "tenant")

	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	g.Expect(k8s.Delete(ctx, sa)).To(Succeed())
	deleteRelease(t, ns, "tenant")
	gone(t, ns, "tenant")
	skipped(t, ns, "tenant", "ServiceAccount "+ns+"/"+sa.Name+" does not exist")
}

// TestHelmRelease_NamespaceDeletionDoesNotWaitOnUs: a namespace holding
// releases whose kubeConfig Secret and ServiceAccount are gone is deleted
// within the deadline: the HelmReleases let go of their finalizer.
func TestHelmRelease_NamespaceDeletionDoesNotWaitOnUs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	sa, binding := newTenant(t, ns)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"},
		Data:       map[string][]byte{"value": rotatedKubeconfig(t, cfg, 0)},
	}
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	newRelease(t, ns, "remote", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.KubeConfig = &kraanv1.KubeConfigReference{SecretRef: &kraanv1.SecretKeyReference{Name: "remote"}}
	})
	newRelease(t, ns, "tenant", "small", func(hr *kraanv1.HelmRelease) { hr.Spec.ServiceAccountName = sa.Name })
	readyAt(t, ns, "remote")
	readyAt(t, ns, "tenant")

	for _, obj := range []client.Object{secret, binding, sa} {
		g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	}
	g.Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Eventually(func() bool {
		err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(timeout).WithPolling(time.Second).Should(BeTrue(), "namespace %s is deleted", ns)
}

// newTenant creates a ServiceAccount of ns bound to the admin ClusterRole
// in ns, what a tenant's releases run as.
func newTenant(t *testing.T, ns string) (*corev1.ServiceAccount, *rbacv1.RoleBinding) {
	t.Helper()
	g := NewWithT(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}}
	g.Expect(k8s.Create(context.Background(), sa)).To(Succeed())
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	g.Expect(k8s.Create(context.Background(), binding)).To(Succeed())
	return sa, binding
}

func deleteRelease(t *testing.T, ns, name string) {
	t.Helper()
	hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	NewWithT(t).Expect(k8s.Delete(context.Background(), hr)).To(Succeed())
}

// gone waits until the HelmRelease no longer exists.
func gone(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &kraanv1.HelmRelease{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue(), "HelmRelease %s/%s is deleted", ns, name)
}

// skipped checks the Warning event saying the release was left installed,
// and why.
func skipped(t *testing.T, ns, name, why string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(k8s.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
		var messages []string
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == name && ev.Reason == kraanv1.ReasonUninstallSkipped {
				g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
				messages = append(messages, ev.Message)
			}
		}
		g.Expect(messages).To(ContainElement(And(ContainSubstring("without uninstalling release "+ns+"/"+name), ContainSubstring(why))))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestHelmRelease_DeletionRefusedIsRetried: a release whose ServiceAccount
// exists but may no longer read the release's records (its RoleBinding is
// gone) is not reported uninstalled: the HelmRelease stays, Ready names
// what was refused, and once the rights are back the release is uninstalled
// and the object goes away.
func TestHelmRelease_DeletionRefusedIsRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	sa, binding := newTenant(t, ns)
	newRelease(t, ns, "refused", "small", func(hr *kraanv1.HelmRelease) { hr.Spec.ServiceAccountName = sa.Name })
	readyAt(t, ns, "refused")

	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	deleteRelease(t, ns, "refused")
	g.Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "refused"), kraanv1.ReadyCondition)
		g.Expect(ready.Reason).To(Equal(kraanv1.ReasonUninstallFailed))
		g.Expect(ready.Message).To(And(ContainSubstring("system:serviceaccount:"+ns+":"+sa.Name), ContainSubstring("cannot")))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		get(g, ns, "refused")
		g.Expect(configMapData(g, ns, "refused")).To(HaveKey("message"))
	}).WithTimeout(3*time.Second).WithPolling(interval).Should(Succeed(), "not let go, nothing uninstalled")

	binding.ResourceVersion = ""
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	gone(t, ns, "refused")
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "refused"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "uninstalled: %v", err)
}
