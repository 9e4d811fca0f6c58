package plugin

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
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
