package namespaced_test

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// startOperator builds ./cmd and runs it with the overlay Deployment's
// arguments and environment, authenticated by a token of the Deployment's
// ServiceAccount, and waits until it reports ready (its informers synced
// with the overlay's permissions).
func startOperator(ctx context.Context, cfg *rest.Config, in *install, work string) (*suite.RunningOperator, error) {
	bin, err := suite.BuildOperator(ctx, work)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(work, "operator.kubeconfig")
	if err := writeServiceAccountKubeconfig(ctx, cfg, in, kubeconfig); err != nil {
		return nil, err
	}
	env, err := containerEnv(in)
	if err != nil {
		return nil, err
	}
	// The Deployment's own arguments first; StartOperator's flags come later
	// and override them, standing in for what the pod would provide. The
	// Lease's namespace is the ServiceAccount's, as in the pod.
	args := append(append([]string{}, in.container.Args...),
		"--leader-election-namespace="+in.deployment.Namespace)
	return suite.StartOperator(ctx, suite.OperatorProcess{
		Name:       "namespaced",
		Binary:     bin,
		Kubeconfig: kubeconfig,
		Dir:        work,
		Args:       args,
		Env:        env,
	})
}

// writeServiceAccountKubeconfig writes a kubeconfig holding a TokenRequest
// token of the Deployment's ServiceAccount: the operator then has exactly the
// overlay's permissions, as in its pod.
func writeServiceAccountKubeconfig(ctx context.Context, cfg *rest.Config, in *install, path string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, name := in.serviceAccount()
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", ns, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: "operator"}
	kc.CurrentContext = "operator"
	return clientcmd.WriteToFile(*kc, path)
}

// containerEnv turns the container's environment into the process's: plain
// values as they are, the pod's namespace as the Deployment's.
func containerEnv(in *install) ([]string, error) {
	var env []string
	for _, e := range in.container.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case isFieldRef(e.ValueFrom, "metadata.namespace"):
			env = append(env, e.Name+"="+in.deployment.Namespace)
		default:
			return nil, fmt.Errorf("the operator's container sets %s from a source the test cannot provide", e.Name)
		}
	}
	return env, nil
}

func isFieldRef(src *corev1.EnvVarSource, path string) bool {
	return src.FieldRef != nil && src.FieldRef.FieldPath == path
}
