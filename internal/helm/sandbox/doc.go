// Package sandbox renders a chart's templates in a child process with
// limits, so that a chart can cost the operator no more than those limits.
//
// Go templates cannot be stopped from inside: a template ranging over a
// large number, or repeating a string, runs and allocates until it is done,
// whatever the context says, and the operator's process is every tenant's.
// So the templates of every release the operator installs or upgrades run in
// a worker process (the operator's own binary, started with
// KRAAN_RENDER_WORKER=1), which
//
//   - may use at most Limits.Memory of data (RLIMIT_DATA, set on it before it
//     reads its input, and GOMEMLIMIT below it so the collector works first),
//   - is killed after Limits.Timeout,
//   - may return at most Limits.Output bytes of rendered files, and
//   - runs on one CPU (GOMAXPROCS=1).
//
// A release over a bound fails with a message naming the bound and its flag;
// the operator and every other release go on. The worker has no credentials:
// a template's lookup is answered by the parent, as the release's identity,
// over a pipe, and each answer is bounded too.
//
// The rendered files then replace the chart's templates as literal text
// (Literal), and Helm's action runs in the operator on that chart: what it
// renders is exactly what the worker rendered, at the cost of copying text.
// Everything else (hooks, ordering, post-renderers, the release record) is
// Helm's as before; the record keeps the chart as it came.
package sandbox
