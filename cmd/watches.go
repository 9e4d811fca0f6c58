package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kraan-io/kraan-operator/internal/operator"
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

// cacheOptions are the operator's cache options for --watch-namespace.
func (o *options) cacheOptions() cache.Options {
	return operator.CacheOptions(o.namespaces())
}
