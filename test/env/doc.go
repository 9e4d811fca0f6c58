// Package env starts a complete local kraan-operator environment outside of
// tests: the local control plane with the operator's and Flux's source CRDs,
// a real Flux source-controller, a Git server over HTTP, a Helm chart
// repository over HTTP (all on loopback) and the operator's manager in this
// process. `make demo` (hack/demo) runs on it; it holds the same steps as the
// end-to-end harness of test/e2e, without depending on package testing.
package env
