package fleet

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kraan-io/kraan-operator/internal/apply"
)

// Limits of one connection. A request to a cluster that does not answer
// gives up after requestTimeout, so a dead cluster holds a worker for
// seconds, not minutes. QPS and burst are Flux's controllers' defaults: a
// layer's pass on a cluster is about four requests per object (adoption
// read, dry run, apply, health), and client-go's 20 QPS made that seconds.
const (
	requestTimeout = 15 * time.Second
	clusterQPS     = 50
	clusterBurst   = 300
)

// DefaultMaxConnections bounds the clusters with open clients: each holds a
// REST mapper and idle HTTP connections. Past it, the least recently used
// is closed and made again on its next use.
const DefaultMaxConnections = 2048

// Connection is the clients of one cluster: a client that reads from the
// API server (nothing of a workload cluster is watched or cached but the
// REST mapping of the kinds its layers hold) and its version.
type Connection struct {
	Client    client.Client
	Discovery discovery.ServerVersionInterface
	applier   *apply.Applier
	http      *http.Client
	digest    string
	lastUsed  uint64
}

// Connections keeps one Connection per kubeconfig content (its digest),
// shared by every registration with that content: a changed kubeconfig
// replaces its registration's connection, and a connection no registration
// uses any more is closed (Retain).
type Connections struct {
	// Scheme decodes typed objects; the layers' objects are unstructured.
	Scheme *runtime.Scheme
	// Max bounds the open connections; 0 is DefaultMaxConnections.
	Max int
	// ReadyKinds are judged by their Ready condition (see apply.NewApplier).
	ReadyKinds []schema.GroupKind

	mu     sync.Mutex
	conns  map[string]*Connection // by digest
	owners map[string]string      // cluster key → digest
	clock  uint64
}

// Get returns the connection of cluster, made from config unless a
// connection of the same kubeconfig content (digest) is open.
func (cs *Connections) Get(cluster, digest string, config *rest.Config) (*Connection, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.conns == nil {
		cs.conns, cs.owners = map[string]*Connection{}, map[string]string{}
	}
	cs.clock++
	c, ok := cs.conns[digest]
	if !ok {
		var err error
		if c, err = newConnection(config, cs.Scheme, cs.ReadyKinds); err != nil {
			return nil, err
		}
		c.digest = digest
		cs.conns[digest] = c
	}
	c.lastUsed = cs.clock
	if old, had := cs.owners[cluster]; had && old != digest {
		delete(cs.owners, cluster)
		cs.closeUnownedLocked(old)
	}
	cs.owners[cluster] = digest
	cs.evictLocked(digest)
	return c, nil
}

// closeUnownedLocked closes digest's connection when no cluster uses it.
func (cs *Connections) closeUnownedLocked(digest string) {
	for _, d := range cs.owners {
		if d == digest {
			return
		}
	}
	if c, ok := cs.conns[digest]; ok {
		c.close()
		delete(cs.conns, digest)
	}
}

func newConnection(config *rest.Config, scheme *runtime.Scheme, readyKinds []schema.GroupKind) (*Connection, error) {
	config = rest.CopyConfig(config)
	config.Timeout = requestTimeout
	config.QPS, config.Burst = clusterQPS, clusterBurst
	config.UserAgent = "kraan-operator/fleet"
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's transport: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the cluster's REST mapper: %w", err)
	}
	c, err := client.New(config, client.Options{HTTPClient: httpClient, Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("the cluster's client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the cluster's discovery client: %w", err)
	}
	return &Connection{Client: c, Discovery: disc, http: httpClient, applier: apply.NewApplier(c, readyKinds...)}, nil
}

// Applier applies, releases and judges a layer's objects on the cluster.
func (c *Connection) Applier() *apply.Applier { return c.applier }

func (c *Connection) close() { c.http.CloseIdleConnections() }

// Retain forgets the clusters not in keys and closes the connections no
// cluster uses any more.
func (cs *Connections) Retain(keys []string) {
	keep := make(map[string]bool, len(keys))
	for _, k := range keys {
		keep[k] = true
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for cluster, digest := range cs.owners {
		if !keep[cluster] {
			delete(cs.owners, cluster)
			cs.closeUnownedLocked(digest)
		}
	}
}

// Len is how many connections are open.
func (cs *Connections) Len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.conns)
}

// evictLocked closes the least recently used connections past Max, never keep's.
func (cs *Connections) evictLocked(keep string) {
	limit := cs.Max
	if limit <= 0 {
		limit = DefaultMaxConnections
	}
	for len(cs.conns) > limit {
		oldest, oldestUse := "", uint64(0)
		for k, c := range cs.conns {
			if k != keep && (oldest == "" || c.lastUsed < oldestUse) {
				oldest, oldestUse = k, c.lastUsed
			}
		}
		if oldest == "" {
			return
		}
		cs.conns[oldest].close()
		delete(cs.conns, oldest)
		for cluster, d := range cs.owners {
			if d == oldest {
				delete(cs.owners, cluster) // its next use connects again
			}
		}
	}
}
