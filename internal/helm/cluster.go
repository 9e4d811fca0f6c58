package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// Cluster is a remote cluster a release is installed into (spec.kubeConfig).
type Cluster struct {
	// Config reaches the cluster.
	Config *rest.Config
	// Key identifies the kubeconfig it was read from, so that the releases
	// of one cluster share one discovery client and REST mapper.
	Key string
}

// Credentials are the secret parts of the cluster's identity, for a
// redactor: a bearer token, a password, a client key.
func (c *Cluster) Credentials() []string {
	var out []string
	for _, v := range []string{c.Config.BearerToken, c.Config.Password, string(c.Config.KeyData)} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ClusterFromKubeconfig reads a kubeconfig from a HelmRelease's Secret. Only
// kubeconfigs that carry everything inline are accepted: a file reference
// (tokenFile, client-certificate, certificate-authority, …) would make the
// operator read its own files — its service account token, say — on a
// tenant's behalf, and an exec or auth-provider plugin would run a program
// in its container. insecure-skip-tls-verify is refused as well, as Flux
// does by default. Errors name what to change; they never quote the file.
func ClusterFromKubeconfig(data []byte) (*Cluster, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, errors.New("the kubeconfig is not valid YAML or not a kubeconfig")
	}
	name := cfg.CurrentContext
	kctx := cfg.Contexts[name]
	if kctx == nil {
		return nil, fmt.Errorf("the kubeconfig's current-context %q is not one of its contexts", name)
	}
	if err := checkInline(cfg, kctx); err != nil {
		return nil, err
	}
	config, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's context %q is incomplete: %w", name, err)
	}
	sum := sha256.Sum256(data)
	return &Cluster{Config: config, Key: hex.EncodeToString(sum[:])}, nil
}

// checkInline refuses what would reach outside the kubeconfig itself.
func checkInline(cfg *clientcmdapi.Config, kctx *clientcmdapi.Context) error {
	cluster := cfg.Clusters[kctx.Cluster]
	if cluster == nil {
		return fmt.Errorf("the kubeconfig's context names cluster %q, which it does not define", kctx.Cluster)
	}
	switch {
	case cluster.CertificateAuthority != "":
		return errors.New("the kubeconfig's cluster refers to a certificate-authority file: use certificate-authority-data")
	case cluster.InsecureSkipTLSVerify:
		return errors.New("the kubeconfig's cluster sets insecure-skip-tls-verify: give certificate-authority-data instead")
	}
	user := cfg.AuthInfos[kctx.AuthInfo]
	if user == nil {
		return nil // anonymous
	}
	switch {
	case user.Exec != nil:
		return errors.New("the kubeconfig's user runs an exec credential plugin, which the operator does not run: use a token or a client certificate")
	case user.AuthProvider != nil:
		return errors.New("the kubeconfig's user uses an auth-provider plugin, which the operator does not run: use a token or a client certificate")
	case user.TokenFile != "", user.ClientCertificate != "", user.ClientKey != "":
		return errors.New("the kubeconfig's user refers to a file (tokenFile, client-certificate or client-key): put the token or the certificate data inline")
	}
	return nil
}

// clusterClients are what Helm actions on one cluster share.
type clusterClients struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.ResettableRESTMapper
	// tracker serves every Helm wait on the cluster from shared informers.
	tracker *rollout.Tracker
	// apis keeps what the cluster serves between actions.
	apis *servedAPIs
	// clientsets are the actions' typed clients, by user.
	clientsets *clientsets
}

func newClusterClients(config *rest.Config) (*clusterClients, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	cached := &versionCache{CachedDiscoveryInterface: memory.NewMemCacheClient(dc), openAPIV3: dc.OpenAPIV3}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the metadata client: %w", err)
	}
	// Helm resets a resettable mapper after installing a chart's CRDs, so
	// kinds defined by those CRDs resolve in the same install.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	return &clusterClients{
		config:     config,
		tracker:    rollout.NewTracker(dyn),
		discovery:  cached,
		mapper:     mapper,
		apis:       &servedAPIs{discovery: cached, reset: mapper.Reset, metadata: meta},
		clientsets: &clientsets{},
	}, nil
}

// maxRemoteClusters bounds the remote clusters whose clients are kept; past
// it they are dropped and made again on next use.
const maxRemoteClusters = 64

// remoteClusters keeps the clients of remote clusters by kubeconfig digest.
type remoteClusters struct {
	mu      sync.Mutex
	clients map[string]*clusterClients
}

func (r *remoteClusters) get(c *Cluster) (*clusterClients, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cc, ok := r.clients[c.Key]; ok {
		return cc, nil
	}
	config := rest.CopyConfig(c.Config)
	config.QPS = max(config.QPS, helmQPS)
	config.Burst = max(config.Burst, helmBurst)
	cc, err := newClusterClients(config)
	if err != nil {
		return nil, err
	}
	if r.clients == nil || len(r.clients) >= maxRemoteClusters {
		r.clients = map[string]*clusterClients{}
	}
	r.clients[c.Key] = cc
	return cc, nil
}
