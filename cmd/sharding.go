package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

// labelSelector parses --watch-label-selector; nil means everything.
func (o *options) labelSelector() (labels.Selector, error) {
	if o.watchLabelSelector == "" {
		return nil, nil
	}
	sel, err := labels.Parse(o.watchLabelSelector)
	if err != nil {
		return nil, fmt.Errorf("--watch-label-selector %q: %w", o.watchLabelSelector, err)
	}
	return sel, nil
}

// watchConfigsSelector parses --watch-configs-label-selector; empty selects
// every ConfigMap and Secret.
func (o *options) watchConfigsSelector() (labels.Selector, error) {
	sel, err := labels.Parse(o.watchConfigs)
	if err != nil {
		return nil, fmt.Errorf("--watch-configs-label-selector %q: %w", o.watchConfigs, err)
	}
	return sel, nil
}

// shardedKinds are the kinds --watch-label-selector splits between operator
// processes: every kind the operator reconciles. Sources, Secrets and the
// objects releases install are read whatever their labels.
func shardedKinds(scheme *runtime.Scheme, ws []watches.Watch) []client.Object {
	kinds := []client.Object{&kraanv1.HelmRelease{}, &kraanv1.AddonsLayer{}, &habitatv1.Habitat{}}
	for _, w := range ws {
		if scheme.Recognizes(w.GroupVersionKind()) {
			continue // typed, listed above
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(w.GroupVersionKind())
		kinds = append(kinds, u)
	}
	return kinds
}

// withLabelSelector limits the cache of the reconciled kinds to the
// selector, as Flux's --watch-label-selector does: the other processes'
// objects are never seen, let alone reconciled.
func withLabelSelector(opts cache.Options, sel labels.Selector, kinds []client.Object) cache.Options {
	if sel == nil {
		return opts
	}
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	for _, k := range kinds {
		opts.ByObject[k] = cache.ByObject{Label: sel}
	}
	return opts
}

// leaderElectionIDFor gives each shard a Lease of its own, so that the
// processes of different shards all lead, and only replicas of one shard
// stand by for each other.
func leaderElectionIDFor(sel labels.Selector) string {
	if sel == nil {
		return leaderElectionID
	}
	sum := sha256.Sum256([]byte(sel.String()))
	return hex.EncodeToString(sum[:4]) + "." + leaderElectionID
}
