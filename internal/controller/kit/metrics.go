package kit

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with registerer, or returns the collector of the same
// description registered before: a second manager in one process (tests,
// benchmarks) shares the series of the first instead of failing.
func Register[T prometheus.Collector](registerer prometheus.Registerer, c T) (T, error) {
	err := registerer.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}
