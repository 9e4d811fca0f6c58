//go:build tools

// Package tools pins the Flux source-controller command built from this module.
package tools

import _ "github.com/fluxcd/source-controller"
