package helm

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
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

// The cluster's version is asked for once per cluster and minute, not twice
// per action, even though Helm invalidates the discovery cache every time.
func TestVersionCache(t *testing.T) {
	g := NewWithT(t)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			requests.Add(1)
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cc, err := newClusterClients(&rest.Config{Host: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cc.discovery.(*versionCache).now = func() time.Time { return now }
	for range 3 {
		cc.discovery.Invalidate() // as Helm's getCapabilities does
		v, err := cc.discovery.ServerVersion()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.GitVersion).To(Equal("v1.37.2"))
	}
	g.Expect(requests.Load()).To(Equal(int32(1)))
	now = now.Add(versionCacheTTL)
	_, err = cc.discovery.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(requests.Load()).To(Equal(int32(2)))
}
