package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kraan-io/kraan-operator/internal/defaults"
)

// featureGates is --feature-gates, Flux's flag: a comma-separated list of
// Name=true|false. Only the gates the operator knows are accepted, so a typo
// stops the operator at start instead of being ignored.
type featureGates struct {
	// helmDefaults receives UseHelm3Defaults.
	helmDefaults *defaults.Defaults
}

// knownGates are the gates --feature-gates accepts, each with a setter.
func (f featureGates) knownGates() map[string]func(bool) {
	return map[string]func(bool){
		defaults.UseHelm3DefaultsGate:               func(on bool) { f.helmDefaults.UseHelm3 = on },
		defaults.CancelHealthCheckOnNewRevisionGate: func(on bool) { f.helmDefaults.KeepWaitOnNewRevision = !on },
	}
}

func (f featureGates) String() string {
	if f.helmDefaults == nil {
		return ""
	}
	return fmt.Sprintf("%s=%t,%s=%t", defaults.UseHelm3DefaultsGate, f.helmDefaults.UseHelm3,
		defaults.CancelHealthCheckOnNewRevisionGate, !f.helmDefaults.KeepWaitOnNewRevision)
}

func (f featureGates) Set(s string) error {
	known := f.knownGates()
	for _, gate := range strings.Split(s, ",") {
		gate = strings.TrimSpace(gate)
		if gate == "" {
			continue
		}
		name, value, ok := strings.Cut(gate, "=")
		set, known := known[name]
		if !known {
			return fmt.Errorf("unknown feature gate %q; known gates: %s", name, strings.Join(slices.Sorted(maps.Keys(f.knownGates())), ", "))
		}
		on, err := strconv.ParseBool(value)
		if !ok || err != nil {
			return fmt.Errorf("feature gate %s wants =true or =false, got %q", name, gate)
		}
		set(on)
	}
	return nil
}
