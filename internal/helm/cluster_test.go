package helm

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const inlineKubeconfig = `apiVersion: v1
kind: Config
current-context: remote
contexts:
- name: remote
  context: {cluster: remote, user: admin}
clusters:
- name: remote
  cluster:
    server: https://remote.example:6443
    certificate-authority-data: ` + "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=" + `
users:
- name: admin
  user:
    token: s3cr3t-t0ken-value
`

func TestClusterFromKubeconfig(t *testing.T) {
	g := NewWithT(t)
	c, err := ClusterFromKubeconfig([]byte(inlineKubeconfig))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Config.Host).To(Equal("https://remote.example:6443"))
	g.Expect(c.Credentials()).To(ConsistOf("s3cr3t-t0ken-value"))
	again, err := ClusterFromKubeconfig([]byte(inlineKubeconfig))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Key).To(Equal(c.Key), "one key per kubeconfig, so its clients are shared")
}

func TestClusterFromKubeconfig_refusesWhatReachesOutside(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"exec plugin", "    token: s3cr3t-t0ken-value", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}", "exec credential plugin"},
		{"auth provider", "    token: s3cr3t-t0ken-value", "    auth-provider: {name: oidc}", "auth-provider plugin"},
		{"token file", "    token: s3cr3t-t0ken-value", "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "refers to a file"},
		{"client certificate file", "    token: s3cr3t-t0ken-value", "    client-certificate: /etc/cert.pem\n    client-key: /etc/key.pem", "refers to a file"},
		{"CA file", "    certificate-authority-data: ", "    certificate-authority: /etc/ca.pem\n    x: ", "certificate-authority file"},
		{"insecure TLS", "    server: https://remote.example:6443", "    server: https://remote.example:6443\n    insecure-skip-tls-verify: true", "insecure-skip-tls-verify"},
		{"unknown context", "current-context: remote", "current-context: elsewhere", `current-context "elsewhere"`},
		{"not a kubeconfig", "apiVersion: v1", "{{{", "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := strings.Replace(inlineKubeconfig, tt.from, tt.to, 1)
			g.Expect(data).NotTo(Equal(inlineKubeconfig))
			_, err := ClusterFromKubeconfig([]byte(data))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"), "never the content")
		})
	}
}
