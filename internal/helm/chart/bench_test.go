package chart_test

import (
	"context"
	"testing"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// BenchmarkFetcher_Fetch measures what a release pays for its chart once the
// repository's index and the archive are cached: the lookup and the load.
func BenchmarkFetcher_Fetch(b *testing.B) {
	sources := map[string]func(b *testing.B) chart.Request{
		"http": func(b *testing.B) chart.Request {
			repo := chartrepo.NewHTTPRepo(b, chartrepo.ChartDir("realistic"))
			return httpRequest(repo.URL, "realistic", "*")
		},
		"oci": func(b *testing.B) chart.Request {
			registry := chartrepo.NewOCIRegistry(b)
			registry.Push(chartrepo.ChartDir("realistic"))
			return ociRequest(registry.URL(), "realistic", "*")
		},
	}
	for name, source := range sources {
		b.Run(name, func(b *testing.B) {
			req := source(b)
			f := chart.NewFetcher(chart.Options{})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Fetch(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
