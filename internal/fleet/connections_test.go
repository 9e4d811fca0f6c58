package fleet

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// A connection is made lazily (no request until used), so these run
// without a cluster.
func TestConnections_onePerKubeconfigContent(t *testing.T) {
	g := NewWithT(t)
	cs := &Connections{}
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	a, err := cs.Get("fleet/a", "digest-1", cfg)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := cs.Get("fleet/b", "digest-1", cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b).To(BeIdenticalTo(a), "two registrations of one kubeconfig share its clients")
	g.Expect(cs.Len()).To(Equal(1))

	c, err := cs.Get("fleet/a", "digest-2", cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).NotTo(BeIdenticalTo(a), "a changed kubeconfig gets new clients")
	g.Expect(cs.Len()).To(Equal(2), "b still uses the first")

	cs.Retain([]string{"fleet/a"})
	g.Expect(cs.Len()).To(Equal(1), "nobody uses digest-1 any more")
	cs.Retain(nil)
	g.Expect(cs.Len()).To(BeZero())
}

func TestConnections_bounded(t *testing.T) {
	g := NewWithT(t)
	cs := &Connections{Max: 3}
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for i := range 10 {
		_, err := cs.Get(string(rune('a'+i)), string(rune('a'+i)), cfg)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(cs.Len()).To(Equal(3))
	_, err := cs.Get("a", "a", cfg)
	g.Expect(err).NotTo(HaveOccurred(), "an evicted cluster connects again")
	g.Expect(cs.Len()).To(Equal(3))
}
