// Package diff compares what the operator would apply with what the cluster
// holds: each desired object is applied as a server-side dry run (so
// defaults, webhooks and other managers' fields are the API server's, not a
// guess), and the live and dry-run objects are printed as a unified YAML
// diff, with objects that would be pruned shown as removed. Secret data is
// never printed: values are masked, and a changed value shows as a changed
// mask.
package diff
