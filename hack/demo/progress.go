package main

import (
	"fmt"
	"io"
	"time"
)

// progress prints one line per step and, when the next step starts, how long
// the previous one took: a newcomer sees what is happening and what is slow.
type progress struct {
	out   io.Writer
	start time.Time // of the current step; zero when none
}

func newProgress(out io.Writer) *progress { return &progress{out: out} }

// step ends the current step, if any, and starts the next.
func (p *progress) step(what string) {
	p.done()
	fmt.Fprintf(p.out, "%s… ", what)
	p.start = time.Now()
}

// done ends the current step, printing its duration.
func (p *progress) done() {
	if p.start.IsZero() {
		return
	}
	fmt.Fprintf(p.out, "%s\n", roundDuration(time.Since(p.start)))
	p.start = time.Time{}
}

// roundDuration keeps durations readable: 1.2s, 350ms.
func roundDuration(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
