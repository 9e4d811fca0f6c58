package chart

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// artifactSource names the place a directory chart was looked for in errors:
// the extraction path means nothing to a user, the caller adds the source.
const artifactSource = "the source artifact"

// LoadDir loads the chart at chartPath inside root, an artifact directory,
// with the dependencies vendored in its charts/ directory. Neither chartPath
// nor a symlink inside the chart can leave root: Helm's loader follows
// symlinks, and a tenant's repository must not read the operator's files.
// Dependencies are never downloaded: a declared one missing from charts/ is a
// MissingDependencyError, and one whose version differs from Chart.lock a
// DependencyMismatchError. The chart must fit the default caps on what a chart
// expands to (Options); a Fetcher applies its own.
func LoadDir(root, chartPath string) (*Result, error) {
	return loadDir(root, chartPath, Options{}.withDefaults().expansionLimits())
}

// loadDir is LoadDir with the caps lim, checked before Helm's loader reads a
// file.
func loadDir(root, chartPath string, lim expansionLimits) (*Result, error) {
	dir, err := securejoin.SecureJoin(root, chartPath)
	if err != nil {
		return nil, fmt.Errorf("chart path %s: %w", chartPath, err)
	}
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.IsDir()) {
		return nil, &ChartNotFoundError{Chart: chartPath, Source: artifactSource}
	}
	if err != nil {
		return nil, err
	}
	if err := checkLinks(root, dir); err != nil {
		return nil, fmt.Errorf("chart %s: %w", chartPath, err)
	}
	if err := newExpansion(lim, fmt.Sprintf("chart %s in %s", chartPath, artifactSource)).checkDir(dir); err != nil {
		return nil, err
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", chartPath, err)
	}
	if err := checkDependencies(ch, true); err != nil {
		return nil, err
	}
	return &Result{Chart: ch, Name: ch.Name(), Version: ch.Metadata.Version, Digest: filesDigest(ch), URL: dir}, nil
}

// checkLinks fails if a symlink under dir resolves outside root. Links to
// directories inside root are followed, as the loader will follow them.
func checkLinks(root, dir string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	return walkLinks(realRoot, dir, map[string]bool{})
}

func walkLinks(root, dir string, visited map[string]bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("broken symlink %s: %w", filepath.Base(p), err)
		}
		rel, err := filepath.Rel(root, target)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("symlink %s points outside the source artifact", filepath.Base(p))
		}
		info, err := os.Stat(target)
		if err == nil && info.IsDir() && !visited[target] {
			visited[target] = true
			return walkLinks(root, target, visited)
		}
		return nil
	})
}

// checkDependencies checks that every dependency of Chart.yaml is vendored,
// as Helm's install does, and with checkLock that vendored versions are the
// ones Chart.lock pins. Only the chart's own dependencies are checked: a
// subchart's are packaged inside it.
func checkDependencies(ch *helmchart.Chart, checkLock bool) error {
	if len(ch.Metadata.Dependencies) == 0 {
		return nil
	}
	vendored := map[string]string{}
	for _, sub := range ch.Dependencies() {
		vendored[sub.Name()] = sub.Metadata.Version
	}
	locked := lockedVersions(ch)
	var missing []string
	seen := map[string]bool{}
	for _, dep := range ch.Metadata.Dependencies {
		version, ok := vendored[dep.Name]
		lockedVersion, isLocked := locked[dep.Name]
		switch {
		case !ok && !seen[dep.Name]:
			seen[dep.Name] = true
			missing = append(missing, describeDependency(dep, lockedVersion))
		case ok && checkLock && isLocked && version != lockedVersion:
			return &DependencyMismatchError{Chart: ch.Name(), Dependency: dep.Name, Locked: lockedVersion, Vendored: version}
		}
	}
	if len(missing) > 0 {
		return &MissingDependencyError{Chart: ch.Name(), Missing: missing}
	}
	return nil
}

func lockedVersions(ch *helmchart.Chart) map[string]string {
	locked := map[string]string{}
	if ch.Lock != nil {
		for _, dep := range ch.Lock.Dependencies {
			locked[dep.Name] = dep.Version
		}
	}
	return locked
}

// describeDependency names a dependency with the version that should be
// vendored: the locked one when there is a lock, else the declared range.
func describeDependency(dep *helmchart.Dependency, locked string) string {
	switch {
	case locked != "":
		return fmt.Sprintf("%s %s (Chart.lock)", dep.Name, locked)
	case dep.Version != "":
		return fmt.Sprintf("%s %s", dep.Name, dep.Version)
	default:
		return dep.Name
	}
}

// filesDigest hashes the names and contents of all the chart's files,
// subcharts included, in a fixed order.
func filesDigest(ch *helmchart.Chart) string {
	files := append([]*common.File(nil), ch.Raw...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// RootOf is where the chart is in an artifact that is one chart: "." when
// Chart.yaml is at the root, else the artifact's only directory (a packaged
// chart unpacks to <name>/). Anything else is "." and fails to load with a
// message naming it.
func RootOf(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err == nil {
		return "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || !entries[0].IsDir() {
		return "."
	}
	return entries[0].Name()
}
