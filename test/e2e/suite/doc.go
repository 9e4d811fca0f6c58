// Package suite owns the start-up and tear-down shared by the end-to-end
// suites under test/e2e that run on one local control plane for the whole
// package: starting test/localplane (KRAAN_E2E_PLANE_DIR keeps its logs),
// installing the CRDs, the admin client, and, for suites that want it, the
// operator's manager running in the test process as cmd/main.go wires it.
// Suites that run the operator binary as a separate process, as deployed,
// build it with BuildOperator and run it with StartOperator.
// A suite's TestMain calls Run; what it starts besides, it starts in Run's
// setup function and stops with Suite.Cleanup.
package suite
