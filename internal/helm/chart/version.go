package chart

import (
	"fmt"
	"sort"

	"github.com/Masterminds/semver/v3"
)

// anyVersion is the range of a HelmRelease without spec.chart.spec.version.
// Like Helm's, it matches stable versions only.
const anyVersion = "*"

// resolveVersion picks the highest of versions that satisfies constraint, a
// Masterminds semver range. A version equal to the constraint string wins
// outright, as in Helm's IndexFile.Get, so a tag that is not strict semver can
// still be asked for by name. Versions that do not parse are ignored.
func resolveVersion(chartName, constraint string, versions []string) (string, error) {
	if constraint == "" {
		constraint = anyVersion
	}
	for _, v := range versions {
		if v == constraint {
			return v, nil
		}
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", fmt.Errorf("invalid version range %q of chart %s: %w", constraint, chartName, err)
	}
	sorted := sortVersions(versions)
	for _, v := range sorted {
		if c.Check(v) {
			return v.Original(), nil
		}
	}
	available := make([]string, len(sorted))
	for i, v := range sorted {
		available[i] = v.Original()
	}
	return "", &VersionNotFoundError{Chart: chartName, Constraint: constraint, Available: available}
}

// sortVersions parses versions and sorts them newest first.
func sortVersions(versions []string) []*semver.Version {
	parsed := make([]*semver.Version, 0, len(versions))
	for _, v := range versions {
		if sv, err := semver.NewVersion(v); err == nil {
			parsed = append(parsed, sv)
		}
	}
	sort.SliceStable(parsed, func(i, j int) bool { return parsed[j].LessThan(parsed[i]) })
	return parsed
}
