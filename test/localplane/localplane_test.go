package localplane_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kraan-io/kraan-operator/test/localplane"
)

// TestPlaneRunsDeployment is the smoke test: a Deployment rolls out onto the
// fake Node with pod IPs, and Stop leaves no process behind.
func TestPlaneRunsDeployment(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	t.Cleanup(func() { dumpLogsOnFailure(t, dir) }) // runs after Stop below

	began := time.Now()
	plane, err := localplane.Start(t.Context(), localplane.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Start: %v", err) // without assets this names what is missing: run `make tools`
	}
	t.Logf("control plane ready in %v", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { _ = plane.Stop() })

	cs, err := kubernetes.NewForConfig(plane.RESTConfig())
	g.Expect(err).NotTo(HaveOccurred())
	deploy := smokeDeployment()
	_, err = cs.AppsV1().Deployments("default").Create(t.Context(), deploy, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		d, err := cs.AppsV1().Deployments("default").Get(t.Context(), deploy.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.ReadyReplicas).To(Equal(int32(2)))
		g.Expect(d.Status.Conditions).To(ContainElement(And(
			HaveField("Type", appsv1.DeploymentAvailable),
			HaveField("Status", corev1.ConditionTrue))))
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	pods, err := cs.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{LabelSelector: "app=smoke"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods.Items).To(HaveLen(2))
	for _, pod := range pods.Items {
		g.Expect(pod.Spec.NodeName).To(Equal(localplane.NodeName))
		g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	}

	// The fake node keeps its Lease renewed, so the node controller never
	// marks it (and every pod on it) NotReady in a long test.
	var firstRenew time.Time
	g.Eventually(func(g Gomega) {
		lease, err := cs.CoordinationV1().Leases("kube-node-lease").Get(t.Context(), localplane.NodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
		if firstRenew.IsZero() {
			firstRenew = lease.Spec.RenewTime.Time
		}
		g.Expect(lease.Spec.RenewTime.After(firstRenew)).To(BeTrue(), "the node Lease is not renewed")
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	pids := plane.PIDs()
	g.Expect(pids).To(HaveLen(5))
	began = time.Now()
	g.Expect(plane.Stop()).To(Succeed())
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	for _, pid := range pids {
		g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "pid %d outlived Stop", pid)
	}
	g.Expect(plane.Stop()).To(Succeed(), "Stop is idempotent")
}

func smokeDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "smoke"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "example.invalid/smoke:never-pulled", // kwok runs nothing
				}}},
			},
		},
	}
}

// TestStartNamesMissingAssets checks that a missing binary is an error that
// says which one and how to get it, rather than a skip or a vague failure.
func TestStartNamesMissingAssets(t *testing.T) {
	g := NewWithT(t)
	assets := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(assets, "etcd"), nil, 0o755)).To(Succeed())

	_, err := localplane.Start(t.Context(), localplane.Options{AssetsDir: assets, Dir: t.TempDir()})
	g.Expect(err).To(MatchError(And(
		ContainSubstring("kube-apiserver"),
		ContainSubstring("kwok-stages.yaml"),
		Not(ContainSubstring("etcd,")),
		ContainSubstring("make tools"))))

	t.Setenv("KUBEBUILDER_ASSETS", "")
	_, err = localplane.Start(t.Context(), localplane.Options{Dir: t.TempDir()})
	g.Expect(err).To(MatchError(And(ContainSubstring("KUBEBUILDER_ASSETS"), ContainSubstring("make tools"))))
}

// dumpLogsOnFailure prints the end of every component log of a failed test,
// since the directory is removed afterwards.
func dumpLogsOnFailure(t *testing.T, dir string) {
	if !t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		t.Logf("--- %s (last 40 lines) ---\n%s", filepath.Base(path), strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// TestPlane_RestartAPIServer_KeepsStateAndClients: a restarted apiserver
// serves what etcd held before, on the same address and certificates, so a
// client made before the restart works after it without being rebuilt; Stop
// then stops the new apiserver too.
func TestPlane_RestartAPIServer_KeepsStateAndClients(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	t.Cleanup(func() { dumpLogsOnFailure(t, dir) })
	plane, err := localplane.Start(t.Context(), localplane.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	cs, err := kubernetes.NewForConfig(plane.RESTConfig())
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-restart", Namespace: "default"}}
	created, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	before := plane.PIDs()

	down, err := plane.RestartAPIServer(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("kube-apiserver down for %v", down.Round(time.Millisecond))

	after := plane.PIDs()
	g.Expect(after).To(HaveLen(len(before)))
	g.Expect(after).NotTo(Equal(before), "the apiserver process was not replaced")
	g.Expect(filepath.Join(dir, "kube-apiserver.log.1")).To(BeAnExistingFile(), "the old apiserver's log was not kept")
	// The old client: same address, same CA, same token.
	got, err := cs.CoreV1().ConfigMaps("default").Get(t.Context(), cm.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.UID).To(Equal(created.UID))

	g.Expect(plane.Stop()).To(Succeed())
	for _, pid := range after {
		g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "pid %d outlived Stop", pid)
	}
}
