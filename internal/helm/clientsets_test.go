package helm

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Every action on a cluster shares one clientset per user, instead of
// building its own for each action (twice).
func TestConfigFor_SharesClientsetsPerUser(t *testing.T) {
	g := NewWithT(t)
	e, err := NewEngine(&rest.Config{Host: "https://127.0.0.1:1"}) // configFor sends no request
	g.Expect(err).NotTo(HaveOccurred())
	clientset := func(target Target) *kubernetes.Clientset {
		cfg, err := e.configFor(target, nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
		cs, err := cfg.KubeClient.(*owningClient).Factory.KubernetesClientSet()
		g.Expect(err).NotTo(HaveOccurred())
		return cs
	}
	target := Target{ReleaseName: "r", Namespace: "apps", StorageNamespace: "apps"}
	g.Expect(clientset(target)).To(BeIdenticalTo(clientset(target)))

	deployer := target
	deployer.Impersonate = "system:serviceaccount:apps:deployer"
	g.Expect(clientset(deployer)).NotTo(BeIdenticalTo(clientset(target)), "a clientset served to another user")
	g.Expect(clientset(deployer)).To(BeIdenticalTo(clientset(deployer)))

	fresh := target
	fresh.FreshClients = true
	g.Expect(clientset(fresh)).NotTo(BeIdenticalTo(clientset(fresh)), "spec.persistentClient false shares nothing")
}
