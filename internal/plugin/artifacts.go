package plugin

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
)

// artifactClient fetches Flux artifacts from where the plugin runs. An
// artifact URL names source-controller's in-cluster Service
// (http://source-controller.flux-system.svc.cluster.local./…), which a
// laptop cannot resolve: such URLs go through the API server's service proxy,
// with the user's credentials. Any other URL is fetched directly.
func artifactClient(cfg *rest.Config) *http.Client {
	return &http.Client{Transport: &serviceProxy{config: cfg, direct: http.DefaultTransport}}
}

type serviceProxy struct {
	config *rest.Config
	direct http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (p *serviceProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	svc, ns, ok := clusterService(req.URL.Hostname())
	if !ok {
		return p.direct.RoundTrip(req)
	}
	rt, err := rest.TransportFor(p.config)
	if err != nil {
		return nil, err
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	base, err := url.Parse(strings.TrimSuffix(p.config.Host, "/"))
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's server %q: %w", p.config.Host, err)
	}
	proxied := req.Clone(req.Context())
	proxied.URL = base.JoinPath("api/v1/namespaces", ns, "services", req.URL.Scheme+":"+svc+":"+port, "proxy", req.URL.Path)
	proxied.Host = ""
	return rt.RoundTrip(proxied)
}

// clusterService parses "<service>.<namespace>.svc[.cluster.local][.]".
func clusterService(host string) (svc, ns string, ok bool) {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) < 3 || parts[2] != "svc" {
		return "", "", false
	}
	return parts[0], parts[1], true
}
