package olm_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/olm"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// runOperatorAsCSV runs the operator binary authenticated as the
// ServiceAccount the CSV csvName created (a TokenRequest token), as OLM's
// Deployment would run it: its informers must sync (list and watch on every
// watched kind) and it must set Upgradeable on the OperatorCondition OLM
// created for the CSV — which proves the CSV's permissions suffice.
func runOperatorAsCSV(t *testing.T, c client.Client, work, csvName string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	fluxCRDs := os.Getenv("KRAAN_SOURCE_CRDS")
	if fluxCRDs == "" {
		t.Fatal("KRAAN_SOURCE_CRDS is not set: run the tests with `make test`, which collects Flux's source CRDs")
	}
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{fluxCRDs}, ErrorIfPathMissing: true})
	g.Expect(err).NotTo(HaveOccurred())

	bin, err := suite.BuildOperator(ctx, work)
	g.Expect(err).NotTo(HaveOccurred())

	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(operatorsNS).CreateToken(ctx, "kraan-controller-manager",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the CSV's ServiceAccount exists")
	saKubeconfig := filepath.Join(work, "sa.kubeconfig")
	g.Expect(writeTokenKubeconfig(cfg, tr.Status.Token, saKubeconfig)).To(Succeed())

	// Ready means the operator's informers synced with the CSV's permissions.
	op, err := suite.StartOperator(ctx, suite.OperatorProcess{Name: "kraan-operator", Binary: bin, Kubeconfig: saKubeconfig,
		Dir: work, Args: []string{"--leader-elect=false"},
		Env: []string{olm.ConditionNameEnv + "=" + csvName, "RUNTIME_NAMESPACE=" + operatorsNS}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("--- kraan-operator log (tail) ---\n%s", op.LogTail(80))
		}
	})
	g.Eventually(func(g Gomega) {
		oc := &apiv2.OperatorCondition{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: csvName}, oc)).To(Succeed())
		cond := meta.FindStatusCondition(oc.Spec.Conditions, apiv2.Upgradeable)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(olm.ReasonNoLayerInProgress))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(),
		"the operator reports Upgradeable on the OperatorCondition OLM created")

	// The layer controller may write layer status with the CSV's permissions.
	layer := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: "held"},
		Spec: kraanv1.AddonsLayerSpec{
			Version: "0.1.0", Hold: true,
			Source: kraanv1.SourceSpec{Name: "addons", Namespace: operatorsNS, Path: "./held"},
		},
	}
	g.Expect(c.Create(ctx, layer)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(layer), layer)).To(Succeed())
		g.Expect(layer.Status.State).To(Equal(kraanv1.HoldState))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the operator sets the held layer's state")
}

func writeTokenKubeconfig(base *rest.Config, token, path string) error {
	ca := base.CAData
	if len(ca) == 0 && base.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(base.CAFile); err != nil {
			return err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = &clientcmdapi.Cluster{Server: base.Host, CertificateAuthorityData: ca}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	return clientcmd.WriteToFile(*kc, path)
}
