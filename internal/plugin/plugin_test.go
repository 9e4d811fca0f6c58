package plugin

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func TestClusterService_ParsesInClusterHostsOnly(t *testing.T) {
	for _, tc := range []struct {
		host    string
		svc, ns string
		ok      bool
	}{
		{host: "source-controller.flux-system.svc.cluster.local.", svc: "source-controller", ns: "flux-system", ok: true},
		{host: "source-controller.flux-system.svc", svc: "source-controller", ns: "flux-system", ok: true},
		{host: "127.0.0.1"},
		{host: "charts.example.com"},
	} {
		svc, ns, ok := clusterService(tc.host)
		NewWithT(t).Expect([]any{svc, ns, ok}).To(Equal([]any{tc.svc, tc.ns, tc.ok}), tc.host)
	}
}

func TestOneLine_JoinsLines(t *testing.T) {
	NewWithT(t).Expect(oneLine("a\n  b\r\nc")).To(Equal("a; b; c"))
}

func TestTable_ColoursWithoutBreakingAlignment(t *testing.T) {
	g := NewWithT(t)
	tb := &table{header: []string{"NAME", "STATUS", "MESSAGE"}, color: true}
	tb.add(text("a"), cell{text: "Ready", tone: toneGood}, text("m"))
	tb.add(text("long-name"), cell{text: "Failed", tone: toneBad}, text("n"))
	var out strings.Builder
	tb.write(&out, true)
	g.Expect(out.String()).To(Equal("NAME        STATUS   MESSAGE\n" +
		"a           \x1b[32mReady\x1b[0m    m\n" +
		"long-name   \x1b[31mFailed\x1b[0m   n\n"))
}

// TestInventoryObjects_SkipsKraansEntries: a layer taken over from Kraan may
// still list, in Kraan's spelling, the Flux HelmReleases Kraan applied. They
// are not the layer's, and reading one (kind without apiVersion) would fail
// the command.
func TestInventoryObjects_SkipsKraansEntries(t *testing.T) {
	layer := &kraanv1.AddonsLayer{Status: kraanv1.AddonsLayerStatus{Resources: []kraanv1.Resource{
		{Kind: "helmreleases.helm.toolkit.fluxcd.io", Namespace: "base", Name: "microservice-1", Status: "Deployed"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "base", Name: "settings", Status: "Deployed"},
	}}}
	objs := inventoryObjects(layer)
	NewWithT(t).Expect(objs).To(HaveLen(1))
	NewWithT(t).Expect(objs[0].GetKind()).To(Equal("ConfigMap"))
}
