package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestLRU_evictsLeastRecentlyUsedByCost(t *testing.T) {
	g := NewWithT(t)
	c := newLRU[string, int](10, 0)
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
	c := newLRU[string, int](10, 0)
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

func TestLRU_evictsByBytesWhateverTheCount(t *testing.T) {
	g := NewWithT(t)
	c := newLRU[string, int](100, 1000)
	for i, key := range []string{"a", "b", "c", "d"} {
		c.add(key, i, 30)
	}
	// 4 × 30 bytes is over 100: the oldest goes although the count is far
	// below its bound.
	_, hasA := c.get("a")
	g.Expect(hasA).To(BeFalse())
	g.Expect(c.used).To(Equal(int64(90)))
	g.Expect(c.entries).To(HaveLen(3))
}

func TestLRU_evictsByCountWithinBytes(t *testing.T) {
	g := NewWithT(t)
	c := newLRU[string, int](1000, 2)
	c.add("a", 1, 1)
	c.add("b", 2, 1)
	c.add("c", 3, 1)
	_, hasA := c.get("a")
	g.Expect(hasA).To(BeFalse())
	g.Expect(c.entries).To(HaveLen(2))
}

func TestLRU_unboundedWhenBoundsAreZero(t *testing.T) {
	g := NewWithT(t)
	c := newLRU[string, int](0, 0)
	for i := range 100 {
		c.add(string(rune('a'+i)), i, 1<<40)
	}
	g.Expect(c.entries).To(HaveLen(100))
}
