package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errNotSynced is what /readyz reports until the caches have synced.
var errNotSynced = errors.New("informer caches of the operator's kinds have not synced yet")

// CacheSyncCheck is a readiness check that turns ready once the informers of
// the operator's kinds have synced, and stays ready: once synced, informers keep
// themselves current, so an API server hiccup must not flip readiness (Kraan's
// probes flapped under load and its users turned them off).
type CacheSyncCheck struct {
	informers cache.Informers
	kinds     []client.Object
	synced    atomic.Bool
}

// NewCacheSyncCheck returns a check over the informers of kinds. Add it to the
// manager as a Runnable so that it starts the informers and waits for them, and
// register Check as a readyz check.
func NewCacheSyncCheck(informers cache.Informers, kinds ...client.Object) *CacheSyncCheck {
	return &CacheSyncCheck{informers: informers, kinds: kinds}
}

// Start creates the kinds' informers and waits for them to sync. It runs on
// every replica, leader or not, so a standby replica holds warm caches and is
// ready to take over.
func (c *CacheSyncCheck) Start(ctx context.Context) error {
	for _, obj := range c.kinds {
		// GetInformer blocks until the informer has synced (or ctx ends).
		if _, err := c.informers.GetInformer(ctx, obj); err != nil {
			if ctx.Err() != nil {
				return nil //nolint:nilerr // shutting down before the sync is not a failure
			}
			return fmt.Errorf("starting the informer for %T: %w", obj, err)
		}
	}
	c.synced.Store(true)
	return nil
}

// NeedLeaderElection tells the manager to run Start on every replica.
func (c *CacheSyncCheck) NeedLeaderElection() bool { return false }

// Check is a healthz.Checker: nil once the informers have synced.
func (c *CacheSyncCheck) Check(_ *http.Request) error {
	if c.synced.Load() {
		return nil
	}
	return errNotSynced
}
