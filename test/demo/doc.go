// Package demo tests `make demo` (hack/demo): run non-interactively, twice,
// everything must reach Deployed and Ready and nothing may be left behind.
package demo
