package helm

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
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

// versionCache remembers the cluster's version, which Helm asks for twice per
// action (its reachability check and its capabilities) and client-go's memory
// cache does not keep. Invalidate, which Helm calls after installing CRDs,
// forgets it with the rest.
type versionCache struct {
	discovery.CachedDiscoveryInterface

	mu      sync.Mutex
	version *version.Info
}

func (c *versionCache) ServerVersion() (*version.Info, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != nil {
		v := *c.version
		return &v, nil
	}
	v, err := c.CachedDiscoveryInterface.ServerVersion()
	if err != nil {
		return nil, err
	}
	c.version = v
	copied := *v
	return &copied, nil
}

func (c *versionCache) Invalidate() {
	c.mu.Lock()
	c.version = nil
	c.mu.Unlock()
	c.CachedDiscoveryInterface.Invalidate()
}
