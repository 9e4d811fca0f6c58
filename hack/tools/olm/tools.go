//go:build tools

// Package tools pins OLM's olm and catalog operators and opm built from this module.
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
	_ "github.com/operator-framework/operator-registry/cmd/opm"
)
