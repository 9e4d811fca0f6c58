// Package health holds the operator's readiness checks.
package health
