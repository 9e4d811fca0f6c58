package releasespec

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestSplitOCIChartURL: Flux v1.7's spec.chart.spec.url names a chart,
// oci://<registry>/<path>/<chart>; its version is spec.chart.spec.ref, so a
// tag or digest in the URL is refused rather than half read.
func TestSplitOCIChartURL(t *testing.T) {
	for raw, want := range map[string][2]string{
		"oci://ghcr.io/stefanprodan/charts/podinfo": {"oci://ghcr.io/stefanprodan/charts", "podinfo"},
		"oci://127.0.0.1:5000/charts/small/":        {"oci://127.0.0.1:5000/charts", "small"},
		"oci://registry.example/podinfo":            {"oci://registry.example", "podinfo"},
	} {
		g := NewWithT(t)
		repo, name, err := splitOCIChartURL(raw)
		g.Expect(err).NotTo(HaveOccurred(), raw)
		g.Expect([2]string{repo, name}).To(Equal(want), raw)
	}
	for raw, want := range map[string]string{
		"https://ghcr.io/x/podinfo":              "is not oci://",
		"oci://ghcr.io":                          "names a registry, not a chart",
		"oci://ghcr.io/x/podinfo:6.9.0":          "goes in spec.chart.spec.ref",
		"oci://ghcr.io/x/podinfo@sha256:abcdef0": "goes in spec.chart.spec.ref",
		"oci:///podinfo":                         "is not oci://",
		"oci://bob:s3cret@ghcr.io/x/podinfo":     "the URL holds credentials: give them in spec.chart.spec.secretRef",
		"oci://s3cret@ghcr.io/x/podinfo":         "the URL holds credentials",
	} {
		_, _, err := splitOCIChartURL(raw)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring(want)), raw)
		NewWithT(t).Expect(err.Error()).NotTo(ContainSubstring("s3cret"), raw)
	}
	// Messages naming the chart never carry a password.
	NewWithT(t).Expect(ociChartName("oci://bob:s3cret@ghcr.io/x/podinfo")).To(Equal("chart oci://ghcr.io/x/podinfo"))
}
