package olm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/olm"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// deploymentName is the operator's Deployment in the CSV.
const deploymentName = "kraan-controller-manager"

// runOperatorPod plays the kubelet for the operator's pod: kwok's pods run
// nothing, so once the CSV's Deployment has the pod template of csvName (OLM
// sets OPERATOR_CONDITION_NAME to the CSV's name), it runs the operator
// binary bin as that template says — its arguments and environment, the
// Subscription's spec.config.env included — authenticated as the
// ServiceAccount the CSV created (a TokenRequest token), so the CSV's
// permissions are the operator's. It returns once the operator is ready.
func runOperatorPod(t *testing.T, c client.Client, work, bin, csvName string) *suite.RunningOperator {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	dep := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: deploymentName}, dep)).To(Succeed())
		g.Expect(containerEnv(dep, olm.ConditionNameEnv)).To(Equal(csvName))
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "the Deployment runs the pod of %s", csvName)
	container := dep.Spec.Template.Spec.Containers[0]
	env, err := podEnv(dep.Namespace, container.Env)
	g.Expect(err).NotTo(HaveOccurred())

	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(operatorsNS).CreateToken(ctx, dep.Spec.Template.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the CSV's ServiceAccount exists")
	dir := filepath.Join(work, csvName)
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	kubeconfig := filepath.Join(dir, "sa.kubeconfig")
	g.Expect(writeTokenKubeconfig(cfg, tr.Status.Token, kubeconfig)).To(Succeed())

	// In a pod the Lease's namespace is the pod's; a process has none.
	args := append(append([]string{}, container.Args...), "--leader-election-namespace="+operatorsNS)
	// A released binary before the lockdown flag (0.1.0) does not know
	// --multi-tenancy-lockdown=false, and had no lockdown to turn off.
	op, err := suite.StartOperator(ctx, suite.OperatorProcess{Name: "kraan-operator", Binary: bin, Kubeconfig: kubeconfig,
		Dir: dir, Args: args, Env: env, Lockdown: csvName == csvV1})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("--- kraan-operator %s log (tail) ---\n%s", csvName, op.LogTail(80))
		}
	})
	return op
}

// podEnv is the environment the kubelet would give the container: values,
// and the pod's namespace for a fieldRef to metadata.namespace (the CSV's
// RUNTIME_NAMESPACE). Anything else is not expected in the CSV.
func podEnv(namespace string, vars []corev1.EnvVar) ([]string, error) {
	env := make([]string, 0, len(vars))
	for _, v := range vars {
		switch {
		case v.ValueFrom == nil:
			env = append(env, v.Name+"="+v.Value)
		case v.ValueFrom.FieldRef != nil && v.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, v.Name+"="+namespace)
		default:
			return nil, fmt.Errorf("environment variable %s: only values and metadata.namespace are supported here", v.Name)
		}
	}
	return env, nil
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
