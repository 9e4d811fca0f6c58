package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupRoot is where the container's cgroup is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// memoryLimitShare is the part of the container's memory limit given to the
// Go heap as its soft limit: the rest is the runtime's own, stacks and the
// binary, so the garbage collector works harder before the kernel kills.
const memoryLimitShare = 0.9

// defaultGCPercent is how far the heap may grow past what the last
// collection kept before the next one, unless GOGC says otherwise. The
// operator's heap is mostly informer caches that live as long as the
// process; Go's default, 100, lets it grow to twice them, and the pages a
// wave of installs spread them over stay resident. Measured at 1000
// releases, 50 keeps the idle resident set ~10 MiB lower for a GC that
// costs ~3 % of the operator's CPU.
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless GOGC is set; it returns the
// percentage in force.
func setGCPercent() int {
	if os.Getenv("GOGC") != "" {
		current := debug.SetGCPercent(100)
		debug.SetGCPercent(current)
		return current
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}

// setMemoryLimitFromCgroup sets the Go runtime's soft memory limit to 90 % of
// the container's memory limit less reserved (the render workers, which live
// in the same container: --max-concurrent-renders × --max-render-memory),
// unless GOMEMLIMIT says otherwise or there is no limit. The operator keeps
// at least a quarter of the limit whatever is reserved. It returns the limit
// set, 0 for none.
func setMemoryLimitFromCgroup(root string, reserved int64) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, ok := cgroupMemoryLimit(root)
	if !ok {
		return 0
	}
	own := max(limit-reserved, limit/4)
	soft := int64(float64(own) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// cgroupMemoryLimit reads the memory limit of the cgroup mounted at root:
// memory.max (cgroup v2), else memory/memory.limit_in_bytes (v1). "max",
// v1's "no limit" (a number near 2^63) and unreadable files mean none.
func cgroupMemoryLimit(root string) (int64, bool) {
	for _, file := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue
		}
		value := strings.TrimSpace(string(data))
		limit, err := strconv.ParseInt(value, 10, 64)
		if err != nil || limit <= 0 || limit >= 1<<62 {
			return 0, false
		}
		return limit, true
	}
	return 0, false
}
