package chart_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newFetcher returns a Fetcher with default options on a fake clock.
func newFetcher() (*chart.Fetcher, *fakeClock) {
	f := chart.NewFetcher(chart.Options{})
	clock := newFakeClock()
	f.SetClock(clock.Now)
	return f, clock
}

// httpRequest asks for a chart of an HTTP repository.
func httpRequest(url, name, version string) chart.Request {
	return chart.Request{Chart: name, Version: version, Repository: &chart.Repository{URL: url}}
}

func fetch(t *testing.T, f *chart.Fetcher, req chart.Request) (*chart.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f.Fetch(ctx, req)
}

// copyChart copies a test chart to a temporary directory tests may change.
func copyChart(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(chartrepo.ChartDir(name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// render runs Helm's install in client-only dry-run mode, as `helm template`
// does: the chart is rendered and validated but nothing is sent anywhere.
func render(ch *helmchart.Chart, values map[string]any) (*release.Release, error) {
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = "test"
	install.Namespace = "default"
	rel, err := install.Run(ch, values)
	if rel == nil {
		return nil, err
	}
	return rel.(*release.Release), err
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
