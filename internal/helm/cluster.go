package helm

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kraan-io/kraan-operator/internal/kubeconfig"
	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// Cluster is a remote cluster a release is installed into (spec.kubeConfig).
type Cluster struct {
	// Config reaches the cluster.
	Config *rest.Config
	// Key identifies the kubeconfig it was read from, so that the releases
	// of one cluster share one discovery client and REST mapper.
	Key string
	// Owner is who uses the cluster, the HelmRelease as namespace/name: the
	// clients of a kubeconfig are stopped once no owner uses it any more (see
	// remoteClusters). Empty keeps them until they are evicted.
	Owner string
}

// Credentials are the secret parts of the cluster's identity, for a
// redactor: a bearer token, a password, a client key.
func (c *Cluster) Credentials() []string { return kubeconfig.Credentials(c.Config) }

// ClusterFromKubeconfig reads a kubeconfig from a HelmRelease's Secret: only
// one that carries everything inline (see kubeconfig.Parse).
func ClusterFromKubeconfig(data []byte) (*Cluster, error) {
	config, key, err := kubeconfig.Parse(data)
	if err != nil {
		return nil, err
	}
	return &Cluster{Config: config, Key: key}, nil
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

// stop ends what the clients run in the background: the watches on the
// cluster's APIs, the rollout informers (when their waits end) and the idle
// connections. The operator's own cluster is never stopped.
func (c *clusterClients) stop() {
	c.apis.stop()
	c.tracker.Close()
	closeIdleConnections(c.config)
}

// closeIdleConnections closes the idle connections of config's transport:
// client-go shares one transport between configs of the same TLS settings,
// so this may close some of another cluster's idle connections, which it
// opens again on its next request.
func closeIdleConnections(config *rest.Config) {
	if rt, err := rest.TransportFor(config); err == nil {
		utilnet.CloseIdleConnectionsFor(rt)
	}
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

// maxRemoteClusters bounds the remote clusters whose clients are kept: past
// it, the least recently used cluster's clients are stopped, and made again
// on its next use. Each costs two watches, a discovery cache and connections;
// 64 covers a fleet managed from one operator without letting a tenant who
// writes many kubeconfigs grow the operator without end.
const maxRemoteClusters = 64

// remoteClusters keeps the clients of remote clusters by kubeconfig digest,
// and stops them when nothing uses them any more.
//
// Each HelmRelease using a kubeconfig is an owner of its digest (Cluster.Owner).
// When an owner comes with another digest (the Secret's content changed, a
// token rotation) or lets go of its cluster (ForgetCluster: deleted, or no
// spec.kubeConfig any more), the digest it held loses that owner; a digest
// without owners has its clients retired at once. Retiring stops the CRD and
// APIService watches, the rollout tracker's informers (those a wait still uses
// when that wait ends) and closes the idle connections; an action that still
// holds the clients finishes with them. Reference counting, not an idle
// timeout: a kubeconfig in use is never dropped because its releases were
// quiet, and a replaced one is stopped without waiting.
type remoteClusters struct {
	mu      sync.Mutex
	entries map[string]*remoteCluster
	// owners maps an owner to the digest it last used.
	owners map[string]string
	// clock counts uses, for the least recently used eviction.
	clock uint64
	// retired are clients to stop once r.mu is released: stopping waits for
	// their watches to end.
	retired []*clusterClients
}

// remoteCluster is the clients of one kubeconfig and who uses them.
type remoteCluster struct {
	clients  *clusterClients
	owners   map[string]struct{}
	lastUsed uint64
}

func (r *remoteClusters) get(c *Cluster) (*clusterClients, error) {
	defer r.stopRetired()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries, r.owners = map[string]*remoteCluster{}, map[string]string{}
	}
	if c.Owner != "" {
		if old, ok := r.owners[c.Owner]; ok && old != c.Key {
			r.disownLocked(c.Owner)
		}
	}
	entry, ok := r.entries[c.Key]
	if !ok {
		cc, err := newRemoteClusterClients(c.Config)
		if err != nil {
			return nil, err
		}
		entry = &remoteCluster{clients: cc, owners: map[string]struct{}{}}
		r.entries[c.Key] = entry
		r.evictLocked(c.Key)
	}
	if c.Owner != "" {
		entry.owners[c.Owner] = struct{}{}
		r.owners[c.Owner] = c.Key
	}
	r.clock++
	entry.lastUsed = r.clock
	return entry.clients, nil
}

// newRemoteClusterClients makes the clients of a remote cluster, with the
// rate limits of a Helm action.
func newRemoteClusterClients(config *rest.Config) (*clusterClients, error) {
	config = rest.CopyConfig(config)
	config.QPS = max(config.QPS, helmQPS)
	config.Burst = max(config.Burst, helmBurst)
	return newClusterClients(config)
}

// forget lets owner go of the cluster it used, if any.
func (r *remoteClusters) forget(owner string) {
	defer r.stopRetired()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disownLocked(owner)
}

// retireAll stops the clients of every remote cluster and forgets them,
// with their owners (Engine.Close).
func (r *remoteClusters) retireAll() {
	defer r.stopRetired()
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.entries {
		r.retireLocked(key)
	}
}

// disownLocked removes owner from the digest it held, retiring the digest's
// clients when no owner is left; r.mu is held.
func (r *remoteClusters) disownLocked(owner string) {
	key, ok := r.owners[owner]
	if !ok {
		return
	}
	delete(r.owners, owner)
	entry := r.entries[key]
	if entry == nil {
		return
	}
	delete(entry.owners, owner)
	if len(entry.owners) == 0 {
		r.retireLocked(key)
	}
}

// evictLocked retires the least recently used clusters while there are more
// than maxRemoteClusters, never keep (the one just made); their owners'
// next use makes them again. r.mu is held.
func (r *remoteClusters) evictLocked(keep string) {
	for len(r.entries) > maxRemoteClusters {
		oldest, oldestUse := "", uint64(0)
		for key, e := range r.entries {
			if key != keep && (oldest == "" || e.lastUsed < oldestUse) {
				oldest, oldestUse = key, e.lastUsed
			}
		}
		if oldest == "" {
			return
		}
		r.retireLocked(oldest)
	}
}

// retireLocked stops the clients of key and forgets them, and the owners
// that held them; r.mu is held.
func (r *remoteClusters) retireLocked(key string) {
	entry := r.entries[key]
	if entry == nil {
		return
	}
	delete(r.entries, key)
	for owner := range entry.owners {
		if r.owners[owner] == key {
			delete(r.owners, owner)
		}
	}
	r.retired = append(r.retired, entry.clients)
}

// stopRetired stops the clients retired while r.mu was held.
func (r *remoteClusters) stopRetired() {
	r.mu.Lock()
	retired := r.retired
	r.retired = nil
	r.mu.Unlock()
	for _, cc := range retired {
		cc.stop()
	}
}

// len is how many remote clusters have clients, for tests.
func (r *remoteClusters) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}
