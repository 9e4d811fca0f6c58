package env

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// helmRepo is a Helm chart repository: archives in <dir>/charts and the
// index.yaml Helm's repo.IndexDirectory writes, served as static files.
type helmRepo struct {
	url, dir string
	srv      *http.Server
	mu       sync.Mutex // one index rewrite at a time
}

func startHelmRepo(ctx context.Context, dir string) (*helmRepo, error) {
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return nil, err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &helmRepo{url: "http://" + l.Addr().String(), dir: dir,
		srv: &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.FileServer(http.Dir(dir))}}
	if err := r.reindex(); err != nil {
		_ = l.Close()
		return nil, err
	}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

func (r *helmRepo) stop() error { return r.srv.Close() }

// add packages the chart directory with Helm's SDK, as `helm package` does,
// once per version (none: the version of its Chart.yaml), and regenerates
// the index.
func (r *helmRepo) add(chartDir string, versions ...string) error {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	if len(versions) == 0 {
		versions = []string{ch.Metadata.Version}
	}
	for _, v := range versions {
		ch.Metadata.Version = v
		if _, err := chartutil.Save(ch, filepath.Join(r.dir, "charts")); err != nil {
			return fmt.Errorf("packaging chart %s version %s: %w", chartDir, v, err)
		}
	}
	return r.reindex()
}

// reindex writes index.yaml under a temporary name and renames it, so that a
// client never reads half an index.
func (r *helmRepo) reindex() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx, err := repo.IndexDirectory(r.dir, r.url)
	if err != nil {
		return fmt.Errorf("indexing charts: %w", err)
	}
	idx.SortEntries()
	tmp := filepath.Join(r.dir, ".index.yaml.tmp")
	if err := idx.WriteFile(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.dir, "index.yaml"))
}
