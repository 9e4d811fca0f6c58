package chart

import "time"

// SetClock replaces the Fetcher's clock, so tests move past the index TTL
// without sleeping.
func (f *Fetcher) SetClock(now func() time.Time) {
	f.now = now
}
