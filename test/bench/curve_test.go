package bench

import (
	"testing"
	"time"

	"github.com/kraan-io/kraan-operator/test/bench/report"
)

// TestCurve_OnePointPerTwentieth: a count that jumps records every
// twentieth it passed, one that stalls records nothing more, and the curve
// stops at 100 %.
func TestCurve_OnePointPerTwentieth(t *testing.T) {
	start := time.Now()
	c := &curve{}
	for _, n := range []int{0, 4, 5, 5, 34, 30} {
		c.observe(n, 200)
	}
	if got := len(c.at); got != 3 {
		t.Fatalf("after 34 of 200 (17 %%): %d points, want 3 (5, 10, 15 %%)", got)
	}
	c.observe(200, 200)
	c.observe(200, 200)
	if got := len(c.at); got != report.CurveSteps {
		t.Fatalf("after all: %d points, want %d", got, report.CurveSteps)
	}
	for i, s := range c.secondsSince(start) {
		if s < 0 {
			t.Fatalf("point %d is %v s before the start", i, s)
		}
	}
	var none *curve
	none.observe(1, 1) // a nil curve records nothing, and does not panic
}
