package soak_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// size is how much a soak does. Two presets exist: short, which `go test
// ./...` (and so `make test` and CI) runs in about three minutes, and full,
// which `make soak` runs. Environment variables change either:
//
//	KRAAN_SOAK_SIZE               short (default) or full
//	KRAAN_SOAK_SEED               the seed of the random schedule (default: the clock; printed)
//	KRAAN_SOAK_KILLS              operator SIGKILLs (short 5, full 20)
//	KRAAN_SOAK_APISERVER_RESTARTS kube-apiserver restarts (short 1, full 2)
//	KRAAN_SOAK_LAYER_RELEASES     HelmReleases in each of the 4 layers (short 2, full 10)
//	KRAAN_SOAK_STANDALONE         standalone HelmReleases (short 3, full 6)
//	KRAAN_SOAK_KEEP               when set, keep the operators' logs after a soak that passed
type size struct {
	name string
	seed int64
	// kills and restarts are the disruptions: operator SIGKILLs and
	// kube-apiserver restarts.
	kills, restarts int
	// layers are chained (each depends on the one before) and hold
	// layerReleases HelmReleases each; standalone HelmReleases and one
	// Habitat are created directly.
	layers, layerReleases, standalone int
	// maxOps is the most workload operations between two kills.
	maxOps int
	// maxKillDelay bounds the random wait between the operations of a
	// cycle and its kill: a kill lands anywhere from mid-apply to idle.
	maxKillDelay time.Duration
	// converge bounds the wait, after the last kill, for everything to be
	// Ready in its final state.
	converge time.Duration
}

var (
	short = size{name: "short", kills: 5, restarts: 1, layers: 4, layerReleases: 2, standalone: 3,
		maxOps: 2, maxKillDelay: 6 * time.Second, converge: 4 * time.Minute}
	full = size{name: "full", kills: 20, restarts: 2, layers: 4, layerReleases: 10, standalone: 6,
		maxOps: 3, maxKillDelay: 15 * time.Second, converge: 10 * time.Minute}
)

// sizeFromEnv returns the preset KRAAN_SOAK_SIZE names with the other
// variables applied; an unknown size or a malformed number is an error, not
// a default.
func sizeFromEnv() (size, error) {
	s := short
	switch os.Getenv("KRAAN_SOAK_SIZE") {
	case "", "short":
	case "full":
		s = full
	default:
		return s, fmt.Errorf("KRAAN_SOAK_SIZE=%q: want short or full", os.Getenv("KRAAN_SOAK_SIZE"))
	}
	s.seed = time.Now().UnixNano()
	var errs []error
	for name, field := range map[string]*int{
		"KRAAN_SOAK_KILLS":              &s.kills,
		"KRAAN_SOAK_APISERVER_RESTARTS": &s.restarts,
		"KRAAN_SOAK_LAYER_RELEASES":     &s.layerReleases,
		"KRAAN_SOAK_STANDALONE":         &s.standalone,
	} {
		errs = append(errs, intFromEnv(name, field))
	}
	if v := os.Getenv("KRAAN_SOAK_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("KRAAN_SOAK_SEED=%q: %w", v, err))
		}
		s.seed = seed
	}
	if s.restarts > s.kills {
		errs = append(errs, fmt.Errorf("%d apiserver restarts need at least as many kills, not %d: each restart happens in a kill cycle", s.restarts, s.kills))
	}
	return s, errors.Join(errs...)
}

// intFromEnv sets *field from the variable name when it is set: a
// non-negative integer.
func intFromEnv(name string, field *int) error {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("%s=%q: want a non-negative integer", name, v)
	}
	*field = n
	return nil
}
