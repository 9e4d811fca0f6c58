package localplane

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestPrefixWriterPrefixesWholeLines checks that output split across writes
// comes out as whole lines, each with the component prefix.
func TestPrefixWriterPrefixesWholeLines(t *testing.T) {
	g := NewWithT(t)
	var out strings.Builder
	w := newPrefixWriter(&out, "[etcd] ")

	for _, chunk := range []string{"first li", "ne\nsecond line\nthi", "rd"} {
		n, err := w.Write([]byte(chunk))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(len(chunk)))
	}
	g.Expect(out.String()).To(Equal("[etcd] first line\n[etcd] second line\n"), "an unfinished line waits for its end")

	_, _ = w.Write([]byte("\n"))
	g.Expect(out.String()).To(HaveSuffix("[etcd] third\n"))
}
