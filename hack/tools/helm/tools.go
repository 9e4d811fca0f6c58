//go:build tools

// Package tools pins the Helm 4 CLI built from this module: the break-glass
// tests run the admin's own tool at the Helm version the operator embeds
// (TestHelmCLI_IsTheOperatorsHelm keeps the two the same).
package tools

import _ "helm.sh/helm/v4/cmd/helm"
