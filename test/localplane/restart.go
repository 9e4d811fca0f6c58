package localplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// apiserverRestartTimeout is longer than a cold start's: a restarted
// apiserver comes up while every client of the plane reconnects and relists
// at once.
const apiserverRestartTimeout = 2 * time.Minute

// RestartAPIServer stops kube-apiserver as a rolling control-plane upgrade
// does (SIGTERM, SIGKILL after a grace period), starts it again with the
// same flags, so on the same port with the same certificates and etcd, and
// returns once it answers /readyz again; it reports how long the API was
// down. Clients keep their configuration: they see refused connections and
// broken watches meanwhile, then carry on, as against a real cluster.
// Everything else of the plane keeps running. The stopped apiserver's log is
// kept as kube-apiserver.log.<n>.
//
// With the plane's clients connected, kube-apiserver v1.37 has not finished
// its graceful shutdown when the grace period (10s) ends and is SIGKILLed;
// it stops accepting connections at once, so the API is away for about 14
// seconds in all.
func (p *Plane) RestartAPIServer(ctx context.Context) (time.Duration, error) {
	p.restartMu.Lock()
	defer p.restartMu.Unlock()
	old, err := p.apiserverChild()
	if err != nil {
		return 0, err
	}
	down := time.Now()
	if err := old.stop(stopGrace); err != nil {
		return 0, fmt.Errorf("localplane: stopping kube-apiserver: %w", err)
	}
	p.restarts++
	log := filepath.Join(p.dir, apiserverBin+".log")
	if err := os.Rename(log, fmt.Sprintf("%s.%d", log, p.restarts)); err != nil {
		return 0, fmt.Errorf("localplane: keeping the log of the stopped kube-apiserver: %w", err)
	}
	c, err := startChild(p.spawner, p.dir, apiserverBin, p.logs, nil, filepath.Join(p.assets, apiserverBin), p.apiserverArgs...)
	if err != nil {
		return 0, fmt.Errorf("localplane: restarting kube-apiserver: %w", err)
	}
	p.mu.Lock()
	p.children[slices.Index(p.children, old)] = c // the same place: Stop stops it before etcd
	p.mu.Unlock()
	cfg := p.RESTConfig()
	err = p.waitFor(ctx, "kube-apiserver /readyz after a restart", apiserverBin, apiserverRestartTimeout, func(ctx context.Context) error {
		return probeReadyz(ctx, cfg)
	})
	return time.Since(down), err
}

// apiserverChild returns the running kube-apiserver.
func (p *Plane) apiserverChild() (*child, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.children {
		if c.name == apiserverBin && !c.hasExited() {
			return c, nil
		}
	}
	return nil, errors.New("localplane: no running kube-apiserver to restart")
}
