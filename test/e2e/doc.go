// Package e2e runs the AddonsLayer controller end to end on the local control
// plane (test/localplane) with a real Flux source-controller fetching from a
// local Git server (Debian git's git-http-backend behind net/http/cgi).
//
// The binaries come from the tool cache: KUBEBUILDER_ASSETS for the control
// plane and KRAAN_SOURCE_CONTROLLER / KRAAN_SOURCE_CRDS for source-controller
// and its CRDs; `make test-e2e` sets all three. A missing one fails the suite
// with a message saying so.
package e2e
