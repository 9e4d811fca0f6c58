package addonslayer

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// The envtest API server registers itself: the "workload cluster" of these
// cases is the cluster the controller runs in, reached through a
// kubeconfig as any other. test/e2e/fleet_test.go has separate planes.
func TestPlacement(t *testing.T) {
	e := startLayerEnv(t)
	t.Run("a placed layer runs on the registered clusters its selector chooses, only those of the platform", e.testPlaced)
	t.Run("a kubeconfig that reaches outside itself makes the cluster unusable, saying why", e.testPlacedKubeconfigRefused)
	t.Run("a selector that chooses no cluster waits", e.testPlacedNoClusters)
	t.Run("an object moved between placed layers is handed over on the cluster, keeping its UID", e.testPlacedHandover)
}

// kubeconfigOf is cfg as an inline kubeconfig; user changes the user's entry.
func kubeconfigOf(g Gomega, cfg *rest.Config, user func(*clientcmdapi.AuthInfo)) []byte {
	data, err := testenv.InlineKubeconfig(cfg, user)
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

// registerCluster registers a cluster in ns, creating ns if needed.
func (e *layerEnv) registerCluster(g Gomega, ns, name string, labels map[string]string, kubeconfig []byte) {
	ctx := context.Background()
	g.Expect(client.IgnoreAlreadyExists(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	g.Expect(testenv.RegisterCluster(ctx, e.c, ns, name, labels, kubeconfig)).To(Succeed())
}

func placement(selector map[string]string) layerOption {
	return func(l *kraanv1.AddonsLayer) {
		l.Spec.Placement = &kraanv1.PlacementSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: selector}}
	}
}

func (e *layerEnv) testPlaced(t *testing.T) {
	g := NewWithT(t)
	e.registerCluster(g, platformNamespace, "self", map[string]string{"placed": "yes"}, kubeconfigOf(g, e.config, nil))
	// A tenant registers the same cluster under the same labels: ignored.
	e.registerCluster(g, "tenant-placed", "sneaky", map[string]string{"placed": "yes"}, kubeconfigOf(g, e.config, nil))
	e.setSource(t, "placed", map[string]string{
		"layers/one/ns.yaml":  namespaceYAML("placed"),
		"layers/one/all.yaml": configMapYAML("placed", "settings", "a"),
	}, false)
	e.createLayer(t, "placed", "placed", "layers/one", placement(map[string]string{"placed": "yes"}))

	l := e.waitState(t, "placed", kraanv1.DeployedState)
	g.Expect(l.Status.Clusters).To(HaveLen(1))
	c := l.Status.Clusters[0]
	g.Expect(c.Cluster).To(Equal(platformNamespace + "/self"))
	g.Expect(c.State).To(Equal(kraanv1.DeployedState))
	g.Expect(c.DeployedVersion).To(Equal("1"))
	g.Expect(c.Wave).To(Equal("all"))
	g.Expect(l.Status.Rollout.Phase).To(Equal(kraanv1.RolloutComplete))
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("Deployed on 1 clusters"))
	g.Expect(l.Status.Resources).To(BeEmpty(), "a placed layer applies nothing to its own cluster")
	cm := e.configMap(g, "placed", "settings")
	g.Expect(cm.Labels).To(HaveKeyWithValue(manifest.LayerLabel, "placed"))

	// Placement removed: the objects stay, the clusters are forgotten.
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "placed")
		l.Spec.Placement = nil
		g.Expect(e.c.Update(context.Background(), l)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "placed")
		g.Expect(l.Status.Clusters).To(BeEmpty())
		g.Expect(l.Status.Rollout).To(BeNil())
		g.Expect(l.Status.State).To(Equal(kraanv1.DeployedState))
		g.Expect(l.Status.Resources).NotTo(BeEmpty(), "it now applies to its own cluster")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(e.configMap(g, "placed", "settings").UID).To(Equal(cm.UID), "nothing was pruned")
}

func (e *layerEnv) testPlacedKubeconfigRefused(t *testing.T) {
	g := NewWithT(t)
	exec := kubeconfigOf(g, e.config, func(u *clientcmdapi.AuthInfo) {
		u.ClientCertificateData, u.ClientKeyData = nil, nil
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "exit 1"}, APIVersion: "client.authentication.k8s.io/v1"}
	})
	e.registerCluster(g, platformNamespace, "plugin", map[string]string{"placed": "plugin"}, exec)
	e.setSource(t, "plugin", map[string]string{"layers/one/all.yaml": configMapYAML("default", "plugin", "a")}, false)
	e.createLayer(t, "plugin", "plugin", "layers/one", placement(map[string]string{"placed": "plugin"}))
	l := e.waitState(t, "plugin", kraanv1.FailedState)
	g.Expect(l.Status.Clusters).To(HaveLen(1))
	c := l.Status.Clusters[0]
	g.Expect(c.State).To(Equal(kraanv1.UnreachableState))
	g.Expect(c.Reason).To(Equal(kraanv1.ReasonKubeConfigError))
	g.Expect(c.Message).To(ContainSubstring("exec credential plugin, which the operator does not run"))
	g.Expect(c.Message).NotTo(ContainSubstring("/bin/sh"), "the kubeconfig is never quoted")
	g.Expect(layerReadyMessage(l)).To(ContainSubstring(platformNamespace + "/plugin"))
}

func (e *layerEnv) testPlacedNoClusters(t *testing.T) {
	g := NewWithT(t)
	e.setSource(t, "nowhere", map[string]string{"layers/one/all.yaml": configMapYAML("default", "nowhere", "a")}, false)
	e.createLayer(t, "nowhere", "nowhere", "layers/one", placement(map[string]string{"placed": "nowhere"}))
	l := e.waitState(t, "nowhere", kraanv1.ApplyPendingState)
	g.Expect(layerReadyMessage(l)).To(ContainSubstring("chooses no registered cluster"))
	g.Expect(apimetaReason(l, kraanv1.ReadyCondition)).To(Equal(kraanv1.ReasonNoClusters))
}

func (e *layerEnv) testPlacedHandover(t *testing.T) {
	g := NewWithT(t)
	e.registerCluster(g, platformNamespace, "self-move", map[string]string{"moves": "yes"}, kubeconfigOf(g, e.config, nil))
	e.setSource(t, "placed-move", map[string]string{
		"a/cm.yaml": configMapYAML("default", "placed-moving", "from-a"),
		"b/cm.yaml": configMapYAML("default", "placed-b-own", "b"),
	}, false)
	// The grace period is long enough for b to adopt, short enough for a to
	// see the adoption within the test.
	for _, name := range []string{"a", "b"} {
		e.createLayer(t, "placed-move-"+name, "placed-move", name, interval(10*time.Second),
			placement(map[string]string{"moves": "yes"}))
		e.waitState(t, "placed-move-"+name, kraanv1.DeployedState)
	}
	uid := e.configMap(g, "default", "placed-moving").UID

	e.setSource(t, "placed-move", map[string]string{
		"a/.keep":   "",
		"b/cm.yaml": configMapYAML("default", "placed-b-own", "b") + "---\n" + configMapYAML("default", "placed-moving", "from-b"),
	}, false)
	g.Eventually(func(g Gomega) {
		cm := e.configMap(g, "default", "placed-moving")
		g.Expect(cm.Labels).To(HaveKeyWithValue(manifest.LayerLabel, "placed-move-b"))
		g.Expect(cm.Data["value"]).To(Equal("from-b"))
		g.Expect(cm.UID).To(Equal(uid), "handed over, not pruned and re-created")
	}).WithTimeout(45 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		l := e.layer(g, "placed-move-a")
		g.Expect(l.Status.Clusters).To(HaveLen(1))
		g.Expect(l.Status.Clusters[0].State).To(Equal(kraanv1.DeployedState), l.Status.Clusters[0].Message)
		g.Expect(l.Status.Clusters[0].Leaving).To(BeEmpty(), "nothing left to prune")
	}).WithTimeout(45 * time.Second).Should(Succeed())
	// The old layer's grace period is over: it let the object go, it did
	// not prune what the new layer owns (its label alone proves nothing).
	g.Expect(e.configMap(g, "default", "placed-moving").UID).To(Equal(uid))
}

func apimetaReason(l *kraanv1.AddonsLayer, condType string) string {
	for _, c := range l.Status.Conditions {
		if c.Type == condType {
			return c.Reason
		}
	}
	return ""
}
