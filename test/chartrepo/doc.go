// Package chartrepo holds test fixtures that serve Helm charts in-process: a
// Helm HTTP repository (index.yaml and chart archives, built with Helm's own
// SDK) and an OCI registry (go-containerregistry's in-memory registry, charts
// pushed with Helm's registry client). Both listen on 127.0.0.1 only, count
// the requests they answer so tests can assert caching, and stop when the test
// or benchmark that started them ends. A HostileRegistry lies to its clients
// (huge or false sizes, endless tag pages, another registry's manifest
// digest) and counts the bytes it sends, to prove that clients bound what
// they read and never trust a digest alone.
//
// The fixtures accept testing.TB, so unit tests, the controller's e2e tests and
// benchmarks share them. The project's test charts live in testdata/charts at
// the repository root; ChartDir finds them from any package.
package chartrepo
