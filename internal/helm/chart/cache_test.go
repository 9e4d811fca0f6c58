package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestLRU_evictsLeastRecentlyUsedByCost(t *testing.T) {
	g := NewWithT(t)
	c := newLRU[string, int](10)
	c.add("a", 1, 4)
	c.add("b", 2, 4)
	_, _ = c.get("a") // b is now the least recently used
	c.add("c", 3, 4)

	_, hasB := c.get("b")
	g.Expect(hasB).To(BeFalse())
	a, hasA := c.get("a")
	g.Expect(hasA).To(BeTrue())
	g.Expect(a).To(Equal(1))
	_, hasC := c.get("c")
	g.Expect(hasC).To(BeTrue())
	g.Expect(c.used).To(Equal(int64(8)))
}

func TestLRU_replacesAndSkipsOversizedEntries(t *testing.T) {
	g := NewWithT(t)
	c := newLRU[string, int](10)
	c.add("a", 1, 4)
	c.add("a", 2, 6)
	v, _ := c.get("a")
	g.Expect(v).To(Equal(2))
	g.Expect(c.used).To(Equal(int64(6)))

	// Bigger than the whole cache: not kept, and nothing else evicted for it.
	c.add("huge", 3, 11)
	_, hasHuge := c.get("huge")
	g.Expect(hasHuge).To(BeFalse())
	_, hasA := c.get("a")
	g.Expect(hasA).To(BeTrue())
}
