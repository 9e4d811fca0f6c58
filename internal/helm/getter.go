package helm

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restClientGetter gives Helm a REST config of its own (impersonating a
// service account when asked) but the engine's shared discovery client and
// REST mapper. Flux's helm-controller builds both anew for every reconcile,
// which costs a full discovery round per release; sharing them costs one.
type restClientGetter struct {
	config    *rest.Config
	namespace string
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

// ToRawKubeConfigLoader is only read by Helm for the default namespace.
func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}

// versionCacheTTL is how long the cluster's version is remembered: it only
// changes when the control plane is upgraded.
const versionCacheTTL = time.Minute

// versionCache remembers the cluster's version, which Helm asks for twice per
// action (its reachability check and its capabilities) after invalidating
// the discovery cache each time: two requests per release and pass that
// would always get the same answer. The version outlives Invalidate, which
// still drops the API groups (kinds of CRDs just installed must resolve), and
// is asked again after versionCacheTTL.
type versionCache struct {
	discovery.CachedDiscoveryInterface
	now func() time.Time
	// openAPIV3, when set, reads the OpenAPI v3 documents uncached.
	openAPIV3 func() openapi.Client

	mu      sync.Mutex
	version *version.Info
	fetched time.Time
}

func (c *versionCache) ServerVersion() (*version.Info, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	if c.version == nil || now().Sub(c.fetched) >= versionCacheTTL {
		v, err := c.CachedDiscoveryInterface.ServerVersion()
		if err != nil {
			return nil, err
		}
		c.version, c.fetched = v, now()
	}
	copied := *c.version
	return &copied, nil
}

// OpenAPIV3 reads the API server's OpenAPI v3 documents afresh: the
// memory-cached discovery client would keep each one it was asked for (the
// core group's is 2.5 MiB) as long as the cluster's APIs stay the same.
// Validators keep their answers instead (sharedValidators.build).
func (c *versionCache) OpenAPIV3() openapi.Client {
	if c.openAPIV3 != nil {
		return c.openAPIV3()
	}
	return c.CachedDiscoveryInterface.OpenAPIV3()
}
