package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/controller/habitat"
	"github.com/kraan-io/kraan-operator/internal/watches"
)

const (
	// defaultWatchesFile is --watches-file's default, relative to the working
	// directory; imageWatchesFile is where the image bakes the file in.
	defaultWatchesFile = "watches.yaml"
	imageWatchesFile   = "/watches.yaml"
)

// loadWatches loads the chart-backed kinds. An invalid file stops the
// operator, its message naming the entry. Only when --watches-file is left at
// its default and neither the working directory nor the image has the file
// does the operator run without chart-backed kinds (e.g. `go run` elsewhere).
func (o *options) loadWatches() ([]watches.Watch, error) {
	path := o.watchesFile
	if path == defaultWatchesFile {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			path = imageWatchesFile
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			ctrl.Log.WithName("setup").Info("No watches file: running without chart-backed kinds",
				"looked", []string{defaultWatchesFile, imageWatchesFile})
			return nil, nil
		}
	}
	list, err := watches.Load(filepath.Clean(path))
	if err != nil {
		return nil, fmt.Errorf("--watches-file: %w", err)
	}
	return list, nil
}

// namespaces splits --watch-namespace: empty watches every namespace.
func (o *options) namespaces() []string {
	var out []string
	for _, ns := range strings.Split(o.watchNamespace, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// cacheOptions limits the manager's cache to --watch-namespace, so the
// operator needs only Roles in those namespaces for namespaced kinds, and
// drops managedFields from every cached object: nothing reads them, and they
// are often the larger part of an object (a third of the cache at 1000
// releases).
func (o *options) cacheOptions() cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			// The Habitat controller's peer lists are the only ConfigMaps
			// read from the cache (values come from the API server): a
			// cluster's other ConfigMaps are never cached.
			&corev1.ConfigMap{}: {Label: habitat.PeerGroupSelector()},
			// Secrets stay cached whole (metadata only): besides values and
			// ring keys, the in-sync check reads Helm's release records
			// (owner=helm) from there instead of listing them per resync.
		},
	}
	nss := o.namespaces()
	if len(nss) == 0 {
		return opts
	}
	opts.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range nss {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}
