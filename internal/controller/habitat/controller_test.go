package habitat

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/chartbacked"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/watches"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

const habitatTimeout = 30 * time.Second

// startHabitatEnv runs the hybrid Habitat API — the chart reconciler of the
// repository's watches.yaml and the Habitat Go controller — on envtest.
// Envtest runs no kubelet: tests create the supervisors' pods and set their
// status themselves.
func startHabitatEnv(t *testing.T) client.Client {
	t.Helper()
	return startHabitatEnvWith(t, kit.ControllerOptions{MaxConcurrentReconciles: 2}).client
}

// habitatEnv is a running hybrid Habitat API: a client of the API server,
// and the Go controller, whose cache tests look into.
type habitatEnv struct {
	client     client.Client
	reconciler *Reconciler
}

// startHabitatEnvWith is startHabitatEnv with the controllers' options.
func startHabitatEnvWith(t *testing.T, workers kit.ControllerOptions) habitatEnv {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	list, err := watches.Load(filepath.Join(root, "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	testenv.OperatorLog()
	mgr := testenv.NewManager(t, env.Config)
	engine, err := helm.NewEngine(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(engine.Close) // after the manager stops, before the API server does
	for _, w := range list {
		g.Expect(chartbacked.Setup(mgr, engine, w, chartbacked.Options{ControllerOptions: workers, ExtraConditions: ChartConditions})).To(Succeed())
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Events: kit.Events{Recorder: mgr.GetEventRecorder("kraan-operator")}}
	g.Expect(r.setupWithManager(mgr, Options{ControllerOptions: workers})).To(Succeed())
	testenv.RunManager(t, mgr)
	return habitatEnv{client: env.Client, reconciler: r}
}

func newHabitat(ns, name, ring string, count int32) *habitatv1.Habitat {
	return &habitatv1.Habitat{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: habitatv1.HabitatSpec{
			Image: "core/redis:4", Count: count,
			Service: habitatv1.ServiceSpec{Name: "redis", Topology: habitatv1.TopologyStandalone, Ring: ring},
		},
	}
}

// runPod creates a pod of Habitat h as its StatefulSet would, and marks it
// Running with ip, as a kubelet would.
func runPod(t *testing.T, c client.Client, h *habitatv1.Habitat, name, ip string) *corev1.Pod {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: name, Labels: map[string]string{
			HabitatLabel: h.Name, PeerGroupLabel: PeerGroup(h),
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "habitat-service", Image: h.Spec.Image}}},
	}
	g.Expect(c.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	g.Expect(c.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// peerList returns the peer-watch file of a peer group in namespace rings.
func peerList(c client.Client, group string) func(Gomega) string {
	return func(g Gomega) string {
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: "rings", Name: PeerConfigMapName(group)}, cm)).To(Succeed())
		return cm.Data[PeerWatchFileKey]
	}
}

func TestReconciler_PeerListsPerRing(t *testing.T) {
	g := NewWithT(t)
	c := startHabitatEnv(t)
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "rings")
	web := newHabitat("rings", "web", "shop", 2)
	web.Spec.Service.Bind = []habitatv1.Bind{{Name: "db", Service: "redis", Group: "default"}}
	db := newHabitat("rings", "db", "shop", 1)
	other := newHabitat("rings", "other", "elsewhere", 1)
	for _, h := range []*habitatv1.Habitat{web, db, other} {
		g.Expect(c.Create(ctx, h)).To(Succeed())
	}
	webPod := runPod(t, c, web, "web-0", "10.0.0.2")
	runPod(t, c, web, "web-1", "10.0.0.3")
	runPod(t, c, db, "db-0", "10.0.0.1")
	runPod(t, c, other, "other-0", "10.0.1.1")
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rings", Name: "db-1",
		Labels: map[string]string{HabitatLabel: "db", PeerGroupLabel: "ring.shop"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	g.Expect(c.Create(ctx, pending)).To(Succeed())

	// One shared list for the ring, in IP order; pending pods are left out.
	g.Eventually(peerList(c, "ring.shop"), habitatTimeout).Should(Equal("10.0.0.1\n10.0.0.2\n10.0.0.3"))
	g.Eventually(peerList(c, "ring.elsewhere"), habitatTimeout).Should(Equal("10.0.1.1"))
	g.Eventually(func(g Gomega) []string {
		got := &habitatv1.Habitat{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(db), got)).To(Succeed())
		return got.Status.Peers
	}, habitatTimeout).Should(Equal([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}))

	// The list follows a pod that dies.
	g.Expect(c.Delete(ctx, webPod)).To(Succeed())
	g.Eventually(peerList(c, "ring.shop"), habitatTimeout).Should(Equal("10.0.0.1\n10.0.0.3"))

	// Both Habitats of the ring own the list, so it outlives either one.
	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: "rings", Name: PeerConfigMapName("ring.shop")}, cm)).To(Succeed())
	g.Expect(cm.OwnerReferences).To(ConsistOf(HaveField("Name", "web"), HaveField("Name", "db")))

	// A hand-deleted list is rewritten.
	g.Expect(c.Delete(ctx, cm)).To(Succeed())
	g.Eventually(peerList(c, "ring.shop"), habitatTimeout).Should(Equal("10.0.0.1\n10.0.0.3"))

	// A list whose label was removed by hand leaves the operator's cache;
	// it is still rewritten, label included, when its ring changes.
	cm = &corev1.ConfigMap{}
	g.Eventually(func(g Gomega) { // the controller may write it meanwhile: retry on conflict
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: "rings", Name: PeerConfigMapName("ring.shop")}, cm)).To(Succeed())
		delete(cm.Labels, PeerGroupLabel)
		g.Expect(c.Update(ctx, cm)).To(Succeed())
	}, habitatTimeout).Should(Succeed())
	runPod(t, c, web, "web-2", "10.0.0.4")
	g.Eventually(func(g Gomega) map[string]string {
		got := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
		g.Expect(got.Data).To(HaveKeyWithValue(PeerWatchFileKey, "10.0.0.1\n10.0.0.3\n10.0.0.4"))
		return got.Labels
	}, habitatTimeout).Should(HaveKeyWithValue(PeerGroupLabel, "ring.shop"))
}

func TestReconciler_ChartAndRingKey(t *testing.T) {
	g := NewWithT(t)
	c := startHabitatEnv(t)
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "secure")
	h := newHabitat("secure", "vault", "sec", 3)
	h.Spec.Service.Topology = habitatv1.TopologyLeader
	h.Spec.Service.GenerateRingKey = true
	g.Expect(c.Create(ctx, h)).To(Succeed())

	// The chart renders the StatefulSet, owned by the Habitat.
	sts := &appsv1.StatefulSet{}
	stsKey := types.NamespacedName{Namespace: "secure", Name: "vault"}
	g.Eventually(func() error { return c.Get(ctx, stsKey, sts) }, habitatTimeout).Should(Succeed())
	g.Expect(*sts.Spec.Replicas).To(BeEquivalentTo(3))
	g.Expect(sts.OwnerReferences).To(ConsistOf(HaveField("Name", "vault")))

	// The ring key is generated once, in Habitat's format.
	secret := &corev1.Secret{}
	secretKey := types.NamespacedName{Namespace: "secure", Name: GeneratedRingKeySecretName("sec")}
	g.Eventually(func() error { return c.Get(ctx, secretKey, secret) }, habitatTimeout).Should(Succeed())
	g.Expect(secret.Data).To(HaveLen(1))
	original := secret.DeepCopy().Data
	for file, content := range secret.Data {
		g.Expect(file).To(MatchRegexp(`^sec-[0-9]{14}\.sym\.key$`))
		g.Expect(string(content)).To(MatchRegexp(`^SYM-SEC-1\n` + regexp.QuoteMeta(strings.TrimSuffix(file, ".sym.key")) + `\n\n[A-Za-z0-9+/]{43}=$`))
	}
	g.Eventually(func(g Gomega) string {
		got := &habitatv1.Habitat{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
		return got.Status.RingKeySecretName
	}, habitatTimeout).Should(Equal(secretKey.Name))

	// Scale 3 → 5 and a new image roll the StatefulSet; the key is kept.
	g.Eventually(func() error { // the controllers write the object too: retry on conflicts
		if err := c.Get(ctx, client.ObjectKeyFromObject(h), h); err != nil {
			return err
		}
		h.Spec.Count = 5
		h.Spec.Image = "core/redis:5"
		return c.Update(ctx, h)
	}, habitatTimeout).Should(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(c.Get(ctx, stsKey, sts)).To(Succeed())
		return sts.Spec.Template.Spec.Containers[0].Image
	}, habitatTimeout).Should(Equal("core/redis:5"))
	g.Expect(*sts.Spec.Replicas).To(BeEquivalentTo(5))
	g.Expect(c.Get(ctx, secretKey, secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(original))

	// Delete: the release is uninstalled and no Warning event is emitted.
	g.Expect(c.Delete(ctx, h)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(h), h)) }, habitatTimeout).Should(BeTrue())
	g.Expect(apierrors.IsNotFound(c.Get(ctx, stsKey, sts))).To(BeTrue())
	events := &corev1.EventList{}
	g.Expect(c.List(ctx, events, client.InNamespace("secure"), client.MatchingFields{"type": corev1.EventTypeWarning})).To(Succeed())
	g.Expect(events.Items).To(BeEmpty())
}

func TestNewRingKey_Format(t *testing.T) {
	g := NewWithT(t)
	file, content, err := NewRingKey("example", time.Date(2017, 8, 29, 11, 30, 29, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file).To(Equal("example-20170829113029.sym.key"))
	g.Expect(string(content)).To(MatchRegexp(`^SYM-SEC-1\nexample-20170829113029\n\n[A-Za-z0-9+/]{43}=$`))
	_, other, err := NewRingKey("example", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).NotTo(Equal(content), "keys are random")
}

func TestRunningPeerIPs(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	pods := []corev1.Pod{
		{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9"}},
		{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}},
		{Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.0.0.2"}},
		{Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.3"}},
	}
	g.Expect(runningPeerIPs(pods)).To(Equal([]string{"10.0.0.1", "10.0.0.9"}))
}

// TestHabitatExamples_AcceptedByTheAPIServer keeps docs/examples/habitat
// valid: every Habitat in them passes the CRD's validation.
func TestHabitatExamples_AcceptedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "docs", "examples", "habitat", "*", "habitat.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(7))
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	habitats := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		objs, err := ssautil.ReadObjects(bytes.NewReader(data))
		g.Expect(err).NotTo(HaveOccurred(), file)
		for _, obj := range objs {
			if obj.GetKind() != "Habitat" {
				continue
			}
			habitats++
			obj.SetNamespace("default") // dry run: the example's namespace need not exist
			err := env.Client.Create(context.Background(), obj, client.DryRunAll)
			g.Expect(err).NotTo(HaveOccurred(), "%s: %s", file, obj.GetName())
		}
	}
	g.Expect(habitats).To(Equal(10))
}

// TestReconcilePeers_GroupBeingDeleted: a pass that read its Habitat before
// the Habitat's deletion reached the cache writes no peer list: one written
// with no live owner would never be garbage collected.
func TestReconcilePeers_GroupBeingDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	c := env.Client
	testenv.CreateNamespace(t, c, "rings")
	h := newHabitat("rings", "web", "shop", 1)
	h.Finalizers = []string{"kraan.io/test-hold"} // keeps it terminating
	g.Expect(c.Create(ctx, h)).To(Succeed())
	runPod(t, c, h, "web-0", "10.0.0.2")
	stale := h.DeepCopy()
	g.Expect(c.Delete(ctx, h)).To(Succeed())

	r := &Reconciler{Client: c, Group: c, APIReader: c}
	g.Expect(r.reconcilePeers(ctx, &habitatScope{obj: stale, group: PeerGroup(stale)}, stale)).To(Succeed())
	err = c.Get(ctx, types.NamespacedName{Namespace: "rings", Name: PeerConfigMapName("ring.shop")}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a peer list with no owner was written: %v", err)
}
