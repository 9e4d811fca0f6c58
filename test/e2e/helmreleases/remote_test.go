package helmreleases_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestHelmRelease_RemoteCluster: a HelmRelease with spec.kubeConfig installs
// into the cluster of that kubeconfig — a second local control plane — with
// its release records there, corrects drift there and uninstalls from there,
// leaving this cluster untouched. A Secret without the key and a kubeconfig
// that would make the operator read a file of its own stall the release with a
// message naming the Secret, and deploy nothing.
func TestHelmRelease_RemoteCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	plane, err := localplane.Start(t.Context(), localplane.Options{Dir: filepath.Join(t.TempDir(), "remote")})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = plane.Stop() })
	remote, err := client.New(plane.RESTConfig(), client.Options{Scheme: testenv.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	ns := newNamespace(t)
	newRepository(t, ns)
	// The release's namespace exists in the remote cluster too, as it must
	// for Helm without createNamespace.
	g.Expect(remote.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	kubeconfig := inlineKubeconfig(t, plane.RESTConfig())
	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"},
		Data:       map[string][]byte{"value": kubeconfig, "with-a-file": []byte(tokenFileKubeconfig(plane.RESTConfig()))},
	})).To(Succeed())

	newRelease(t, ns, "edge", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.KubeConfig = &kraanv1.KubeConfigReference{SecretRef: &kraanv1.SecretKeyReference{Name: "remote"}}
		hr.Spec.DriftDetection = &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionEnabled}
		hr.Spec.Values = toJSON(map[string]any{"message": "in the remote cluster"})
	})
	readyAt(t, ns, "edge")
	cm := &corev1.ConfigMap{}
	g.Expect(remote.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("message", "in the remote cluster"))
	g.Expect(remoteRevisions(g, remote, ns, "edge")).To(ConsistOf("1"), "the release records live in the remote cluster")
	g.Expect(helmRevisions(g, ns, "edge")).To(BeEmpty(), "and not here")
	err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing of the chart is installed here: %v", err)

	// Drift in the remote cluster is corrected there.
	g.Eventually(func(g Gomega) {
		g.Expect(remote.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge"}, cm)).To(Succeed())
		cm.Data["message"] = "edited by hand"
		g.Expect(remote.Update(ctx, cm)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	annotate(t, ns, "edge", map[string]string{"reconcile.fluxcd.io/requestedAt": time.Now().String()})
	g.Eventually(func(g Gomega) {
		g.Expect(remote.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("message", "in the remote cluster"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// A key the Secret lacks, and a kubeconfig referring to a file: stalled,
	// nothing installed anywhere.
	for name, key := range map[string]string{"nokey": "missing", "fileref": "with-a-file"} {
		newRelease(t, ns, name, "small", func(hr *kraanv1.HelmRelease) {
			hr.Spec.KubeConfig = &kraanv1.KubeConfigReference{SecretRef: &kraanv1.SecretKeyReference{Name: "remote", Key: key}}
		})
	}
	want := map[string]string{"nokey": `kubeConfig Secret ` + ns + `/remote has no key "missing"`,
		"fileref": `kubeConfig Secret ` + ns + `/remote, key "with-a-file": the kubeconfig's user refers to a file`}
	for name, msg := range want {
		g.Eventually(func(g Gomega) {
			stalled := condition(get(g, ns, name), kraanv1.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(kraanv1.ReasonKubeConfigError))
			g.Expect(stalled.Message).To(ContainSubstring(msg))
			g.Expect(stalled.Message).NotTo(ContainSubstring(plane.RESTConfig().BearerToken))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), name)
		g.Expect(remoteRevisions(g, remote, ns, name)).To(BeEmpty())
		g.Expect(helmRevisions(g, ns, name)).To(BeEmpty())
	}

	// Deleting the release uninstalls it from the remote cluster.
	g.Expect(k8s.Delete(ctx, &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := remote.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		g.Expect(remoteRevisions(g, remote, ns, "edge")).To(BeEmpty())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// inlineKubeconfig is a kubeconfig for cfg that carries its token and CA
// inline, as a kubeConfig Secret must.
func inlineKubeconfig(t *testing.T, cfg *rest.Config) []byte {
	ca := cfg.CAData
	if len(ca) == 0 {
		var err error
		ca, err = os.ReadFile(cfg.CAFile)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
	data, err := clientcmd.Write(clientcmdapi.Config{
		CurrentContext: "remote",
		Contexts:       map[string]*clientcmdapi.Context{"remote": {Cluster: "remote", AuthInfo: "admin"}},
		Clusters:       map[string]*clientcmdapi.Cluster{"remote": {Server: cfg.Host, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"admin": {Token: cfg.BearerToken}},
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return data
}

// tokenFileKubeconfig reads the token from a file of the operator's: what a
// hostile tenant would write to borrow the operator's service account.
func tokenFileKubeconfig(cfg *rest.Config) string {
	return `apiVersion: v1
kind: Config
current-context: remote
contexts: [{name: remote, context: {cluster: remote, user: admin}}]
clusters: [{name: remote, cluster: {server: "` + cfg.Host + `"}}]
users: [{name: admin, user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}}]
`
}

// remoteRevisions lists the revisions Helm storage in the remote cluster holds.
func remoteRevisions(g Gomega, remote client.Client, namespace, release string) []string {
	revisions, err := suite.HelmRevisions(context.Background(), remote, namespace, release)
	g.Expect(err).NotTo(HaveOccurred())
	return revisions
}
