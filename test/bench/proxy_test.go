package bench

import (
	"encoding/pem"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kraan-io/kraan-operator/test/bench/report"
)

// countingProxy is a reverse proxy on loopback in front of the plane's API
// server, holding the plane's admin credentials: the operator process is
// given a kubeconfig that points at it, and every request it makes is
// counted by kind on the way through. It serves TLS and HTTP/2, as an API
// server does: over plain HTTP, client-go uses HTTP/1.1, a connection per
// watch, and gzip whatever the config says, which the operator never does
// against a real cluster.
type countingProxy struct {
	counts requestCounts
	srv    *httptest.Server
}

// startProxy serves the proxy until stop. The transport is the admin
// config's (TLS, bearer token); FlushInterval -1 flushes every write so
// watches stream instead of sitting in a buffer.
func startProxy(cfg *rest.Config) (*countingProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	p := &countingProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1,
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.counts.add(requestKind(r))
		rp.ServeHTTP(w, r)
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	return p, nil
}

// stop closes the proxy and the connections still open through it.
func (p *countingProxy) stop() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// writeKubeconfig writes a kubeconfig for the proxy: its CA, no
// credentials, the proxy adds them.
func (p *countingProxy) writeKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: p.srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	cfg.CurrentContext = "bench"
	return clientcmd.WriteToFile(*cfg, path)
}

// requestCounts counts requests by kind ("GET secrets", "WATCH apps/deployments").
type requestCounts struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (r *requestCounts) add(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int64{}
	}
	r.counts[kind]++
}

// snapshot copies the counts so far; since subtracts one from them.
func (r *requestCounts) snapshot() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.counts)
}

// since returns the requests counted after before was taken.
func (r *requestCounts) since(before map[string]int64) report.Requests {
	now := r.snapshot()
	out := report.Requests{ByKind: map[string]int64{}}
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			out.ByKind[k] = d
			out.Total += d
		}
	}
	return out
}

// requestKind names a request by verb and resource: the path's last
// resource segment (/api/v1/namespaces/x/secrets/y → secrets), its API group,
// and the subresource if any; a list with ?watch=true is a WATCH.
func requestKind(r *http.Request) string {
	verb := r.Method
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		verb = "WATCH"
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	group := ""
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1]+"/", parts[3:]
	default:
		return verb + " " + r.URL.Path // discovery, /version
	}
	if len(parts) >= 3 && parts[0] == "namespaces" { // a namespaced resource, not a Namespace
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return verb + " " + group + "(discovery)"
	}
	kind := group + parts[0]
	if len(parts) >= 3 {
		kind += "/" + parts[2]
	} else if len(parts) == 1 && verb == http.MethodGet {
		verb = "LIST"
	}
	return verb + " " + kind
}
