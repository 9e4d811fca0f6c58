// Package fair shares a fixed number of places (run slots, render
// workers) between namespaces, so that one namespace's backlog delays its
// own work and not every other namespace's: a freed place goes to the
// waiter whose namespace holds the fewest, among equals to the namespace
// served longest ago (round robin), and within a namespace in arrival
// order.
package fair

import (
	"context"
	"sync"
)

// Slots are n places shared between namespaces.
type Slots struct {
	mu      sync.Mutex
	free    int
	held    map[string]int
	waiting []*waiter
	// served is when (grants counted) each namespace holding or waiting for
	// a place was last given one.
	served map[string]uint64
	grants uint64
}

type waiter struct {
	namespace string
	granted   chan struct{}
}

// NewSlots returns n places, all free (at least one).
func NewSlots(n int) *Slots {
	return &Slots{free: max(n, 1), held: map[string]int{}, served: map[string]uint64{}}
}

// Acquire takes a place for namespace, waiting for one as long as ctx
// allows. Every Acquire that returns nil needs one Release.
func (s *Slots) Acquire(ctx context.Context, namespace string) error {
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.grantLocked(namespace)
		s.mu.Unlock()
		return nil
	}
	w := &waiter{namespace: namespace, granted: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, other := range s.waiting {
			if other == w {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				s.forgetIfIdleLocked(namespace)
				return ctx.Err()
			}
		}
		// Granted meanwhile: the place is ours; give it on.
		s.releaseLocked(namespace)
		return ctx.Err()
	}
}

// Release gives back a place namespace held.
func (s *Slots) Release(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(namespace)
}

func (s *Slots) releaseLocked(namespace string) {
	if s.held[namespace]--; s.held[namespace] <= 0 {
		delete(s.held, namespace)
	}
	defer s.forgetIfIdleLocked(namespace)
	if len(s.waiting) == 0 {
		s.free++
		return
	}
	next := 0
	for i, w := range s.waiting {
		if s.before(w.namespace, s.waiting[next].namespace) {
			next = i
		}
	}
	w := s.waiting[next]
	s.waiting = append(s.waiting[:next], s.waiting[next+1:]...)
	s.grantLocked(w.namespace)
	close(w.granted)
}

// before says whether namespace a's waiter goes before b's: a holds fewer
// places, or as many and was served longer ago. Equal, the earlier arrival
// goes first.
func (s *Slots) before(a, b string) bool {
	if s.held[a] != s.held[b] {
		return s.held[a] < s.held[b]
	}
	return s.served[a] < s.served[b]
}

func (s *Slots) grantLocked(namespace string) {
	s.held[namespace]++
	s.grants++
	s.served[namespace] = s.grants
}

// forgetIfIdleLocked drops what is known of a namespace that neither holds
// nor waits for a place, so the map stays as small as the namespaces at work.
func (s *Slots) forgetIfIdleLocked(namespace string) {
	if s.held[namespace] > 0 {
		return
	}
	for _, w := range s.waiting {
		if w.namespace == namespace {
			return
		}
	}
	delete(s.served, namespace)
}

// Waiting is how many wait for a place.
func (s *Slots) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting)
}

// Held is how many places namespace holds.
func (s *Slots) Held(namespace string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[namespace]
}
