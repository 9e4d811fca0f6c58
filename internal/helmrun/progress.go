package helmrun

import (
	"context"
	"sync"
	"time"

	"github.com/kraan-io/kraan-operator/internal/helm"
)

// progressReporter tells a run's Report the action it is in, once the
// action has gone on for delay: the caller writes it on the object from a
// copy of its own, since the worker that launched the run has moved on.
type progressReporter struct {
	// delay is how long an action runs before it is reported.
	delay  func() time.Duration
	report func(ctx context.Context, action helm.Action)

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

// action starts the delay of a new action, dropping the previous one's.
func (p *progressReporter) action(ctx context.Context, action helm.Action) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(p.delay(), func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopped {
			return
		}
		p.report(ctx, action)
	})
}

// stop ends the reports: the run is over.
func (p *progressReporter) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
}
