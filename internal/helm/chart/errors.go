package chart

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// maxListedVersions is how many of the newest versions a VersionNotFoundError
// lists: enough to spot a typo in a range, short enough for a condition.
const maxListedVersions = 5

// ChartNotFoundError is returned when a repository has no chart of that name.
//
//nolint:revive // "NotFoundError" alone would not say what was not found beside VersionNotFoundError.
type ChartNotFoundError struct {
	// Chart is the chart name asked for.
	Chart string
	// Source is the index URL or OCI repository that was searched.
	Source string
}

func (e *ChartNotFoundError) Error() string {
	return fmt.Sprintf("chart %s not found in %s", e.Chart, e.Source)
}

// VersionNotFoundError is returned when no version of a chart satisfies the
// requested semver range.
type VersionNotFoundError struct {
	// Chart is the chart name.
	Chart string
	// Constraint is the semver range asked for.
	Constraint string
	// Available are the chart's versions, newest first.
	Available []string
}

func (e *VersionNotFoundError) Error() string {
	if len(e.Available) == 0 {
		return fmt.Sprintf("no version of %s matches %s; the repository lists no valid version", e.Chart, e.Constraint)
	}
	listed := e.Available
	more := ""
	if len(listed) > maxListedVersions {
		more = fmt.Sprintf(", … (%d more)", len(listed)-maxListedVersions)
		listed = listed[:maxListedVersions]
	}
	return fmt.Sprintf("no version of %s matches %s; available: %s%s",
		e.Chart, e.Constraint, strings.Join(listed, ", "), more)
}

// UnreachableError is returned when a repository cannot be reached at all:
// DNS, connection, TLS or timeout failures.
type UnreachableError struct {
	// URL that was requested.
	URL string
	// Err is the transport's error.
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("repository unreachable: %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// AuthError is returned when a repository refuses the credentials given (or
// their absence) with 401 Unauthorized or 403 Forbidden.
type AuthError struct {
	// Step is what was being done: "fetching index", "downloading chart",
	// "listing tags", "resolving tag" or "pulling chart".
	Step string
	// URL that was requested.
	URL string
	// StatusCode is 401 or 403.
	StatusCode int
	// Anonymous is set when no credentials were sent.
	Anonymous bool
}

func (e *AuthError) Error() string {
	hint := "the repository refused the credentials of the HelmRepository's secretRef: check them"
	if e.Anonymous {
		hint = "the repository needs credentials: set the HelmRepository's secretRef"
	}
	step := e.Step
	if step == "" {
		step = "requesting"
	}
	return fmt.Sprintf("%s: %d %s from %s: %s", step, e.StatusCode, http.StatusText(e.StatusCode), e.URL, hint)
}

// StatusError is returned when a repository answers with an unexpected HTTP
// status other than 401 and 403.
type StatusError struct {
	// URL that was requested.
	URL string
	// StatusCode is the status of the response.
	StatusCode int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: unexpected status %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
}

// InvalidIndexError is returned when a repository's index.yaml cannot be parsed.
type InvalidIndexError struct {
	// URL of the index.
	URL string
	// Err is the parser's error.
	Err error
}

func (e *InvalidIndexError) Error() string {
	return fmt.Sprintf("invalid repository index %s: %v", e.URL, e.Err)
}

func (e *InvalidIndexError) Unwrap() error { return e.Err }

// DigestMismatchError is returned when a downloaded chart archive is not the
// one the repository index describes.
type DigestMismatchError struct {
	// URL of the archive.
	URL string
	// Expected is the digest in the index, Actual the one downloaded.
	Expected string
	Actual   string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("chart archive %s has digest %s, but the repository index says %s",
		e.URL, e.Actual, e.Expected)
}

// ContentMismatchError is returned when a registry sends content that is
// not what its descriptor declares: another size, or another digest.
type ContentMismatchError struct {
	// What was fetched, e.g. "chart layer of oci://host/charts/app:1.0.0".
	What string
	// Problem says how it differs.
	Problem string
}

func (e *ContentMismatchError) Error() string {
	return fmt.Sprintf("%s: %s", e.What, e.Problem)
}

// MissingDependencyError is returned when a chart declares dependencies that
// its charts/ directory does not hold. Dependencies are never downloaded:
// they must be vendored (`helm dependency build`).
type MissingDependencyError struct {
	// Chart is the name of the chart declaring them.
	Chart string
	// Missing are the dependencies, as "name" or "name version".
	Missing []string
}

func (e *MissingDependencyError) Error() string {
	return fmt.Sprintf("chart %s declares dependencies missing from its charts/ directory: %s; "+
		"vendor them with `helm dependency build` (dependencies are not downloaded)",
		e.Chart, strings.Join(e.Missing, ", "))
}

// DependencyMismatchError is returned when a vendored dependency is not the
// version Chart.lock pins.
type DependencyMismatchError struct {
	// Chart is the name of the chart declaring the dependency.
	Chart string
	// Dependency is the dependency's name.
	Dependency string
	// Locked is the version in Chart.lock, Vendored the one in charts/.
	Locked   string
	Vendored string
}

func (e *DependencyMismatchError) Error() string {
	return fmt.Sprintf("chart %s: charts/ holds %s %s but Chart.lock pins %s; run `helm dependency build`",
		e.Chart, e.Dependency, e.Vendored, e.Locked)
}

// MissingValuesFileError is returned when a values file named in
// spec.chart.spec.valuesFiles does not exist.
type MissingValuesFileError struct {
	// Chart is the chart's name.
	Chart string
	// File is the path as given.
	File string
}

func (e *MissingValuesFileError) Error() string {
	return fmt.Sprintf("values file %s not found in chart %s", e.File, e.Chart)
}

// IsTransient reports whether err may go away by itself, so that retrying
// with backoff makes sense: an unreachable repository, a server error, rate
// limiting. Configuration mistakes (wrong chart name, version range,
// credentials, a broken chart) are not transient.
func IsTransient(err error) bool {
	var unreachable *UnreachableError
	if errors.As(err, &unreachable) {
		return true
	}
	var status *StatusError
	if errors.As(err, &status) {
		return status.StatusCode >= http.StatusInternalServerError ||
			status.StatusCode == http.StatusTooManyRequests ||
			status.StatusCode == http.StatusRequestTimeout
	}
	return false
}

// IsTerminal reports whether err is a mistake only the user can fix: a chart
// or version the repository does not have, credentials it refuses, an index
// or chart that is broken or over a size cap, a dependency or values file
// missing, or a request
// the repository rejects as a client error (4xx but 408 and 429). Retrying
// without a change gives the same answer.
func IsTerminal(err error) bool {
	if err == nil || IsTransient(err) {
		return false
	}
	var (
		chartNotFound   *ChartNotFoundError
		versionNotFound *VersionNotFoundError
		auth            *AuthError
		invalidIndex    *InvalidIndexError
		digest          *DigestMismatchError
		missingDep      *MissingDependencyError
		depMismatch     *DependencyMismatchError
		missingValues   *MissingValuesFileError
		status          *StatusError
		limit           *LimitError
		mismatch        *ContentMismatchError
	)
	switch {
	case errors.As(err, &chartNotFound), errors.As(err, &versionNotFound), errors.As(err, &auth),
		errors.As(err, &invalidIndex), errors.As(err, &digest), errors.As(err, &missingDep),
		errors.As(err, &depMismatch), errors.As(err, &missingValues), errors.As(err, &limit),
		errors.As(err, &mismatch):
		return true
	case errors.As(err, &status):
		return status.StatusCode >= http.StatusBadRequest && status.StatusCode < http.StatusInternalServerError
	}
	return false
}
