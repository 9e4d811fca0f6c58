// Package watches loads watches.yaml, the list of chart-backed APIs: each
// entry maps a group/version/kind to a Helm chart whose release the chart
// reconciler keeps for every object of that kind. The format is Operator
// SDK's, so existing watches files keep working, with three fields of
// ours that confine each kind's releases (see docs/habitat.md):
// serviceAccountName (impersonated), allowedKinds (derived from the chart
// when unset) and allowClusterScoped (false by default).
package watches
