// Package crd holds the operator's CustomResourceDefinitions as `make
// manifests` generates them, for the code that needs a kind's schema at run
// time: the defaults the API server fills in (see internal/tenancy).
package crd

import _ "embed"

// HelmReleases is the HelmRelease CRD (kraan.io).
//
//go:embed bases/kraan.io_helmreleases.yaml
var HelmReleases []byte
