package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// orderRecorder watches the layers and records when each first reached
// Deployed at a version and revision. A watch, not the table's polling, so
// that layers Deployed a few milliseconds apart are told apart.
type orderRecorder struct {
	version, rev string
	start        time.Time

	mu         sync.Mutex
	deployedAt map[string]time.Duration
	deps       map[string][]string // layer → the layers it depends on
}

// startOrderRecorder records until ctx ends.
func startOrderRecorder(ctx context.Context, c client.WithWatch, version, rev string, start time.Time) *orderRecorder {
	r := &orderRecorder{version: version, rev: rev, start: start,
		deployedAt: map[string]time.Duration{}, deps: map[string][]string{}}
	// A watch ends when the API server closes it: start another after a pause.
	go wait.UntilWithContext(ctx, func(ctx context.Context) { r.watchOnce(ctx, c) }, 100*time.Millisecond)
	return r
}

func (r *orderRecorder) watchOnce(ctx context.Context, c client.WithWatch) {
	w, err := c.Watch(ctx, &kraanv1.AddonsLayerList{})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if l, ok := ev.Object.(*kraanv1.AddonsLayer); ok {
			r.observe(l)
		}
	}
}

// observe records the layer's dependencies and the first time it was Deployed.
func (r *orderRecorder) observe(l *kraanv1.AddonsLayer) {
	at := time.Since(r.start)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deps[l.Name] = dependencyNames(l.Spec.Prereqs.DependsOn)
	if _, seen := r.deployedAt[l.Name]; !seen && layerDone(l, r.version, r.rev) {
		r.deployedAt[l.Name] = at
	}
}

// layerDone: Deployed at version and revision, for the current generation.
func layerDone(l *kraanv1.AddonsLayer, version, rev string) bool {
	return l.Status.State == kraanv1.DeployedState && l.Status.Version == version &&
		l.Status.Revision == rev && l.Status.ObservedGeneration == l.Generation
}

// dependencyNames strips the versions of <layer>@<version> prerequisites.
func dependencyNames(deps []string) []string {
	names := make([]string, 0, len(deps))
	for _, d := range deps {
		name, _, _ := strings.Cut(d, "@")
		names = append(names, name)
	}
	return names
}

// report prints when each layer was Deployed and fails if a layer was
// Deployed before one of its dependencies, which the operator must never do.
func (r *orderRecorder) report() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.deployedAt))
	for n := range r.deployedAt {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return r.deployedAt[names[i]] < r.deployedAt[names[j]] })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s +%s", n, roundDuration(r.deployedAt[n])))
		for _, dep := range r.deps[n] {
			at, ok := r.deployedAt[dep]
			if !ok || at > r.deployedAt[n] {
				return "", fmt.Errorf("layer %s was Deployed before its dependency %s", n, dep)
			}
		}
	}
	return "Rollout order (Deployed at): " + strings.Join(parts, " → "), nil
}
