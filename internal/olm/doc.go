// Package olm integrates the operator with the Operator Lifecycle Manager.
//
// When OLM runs the operator it creates an OperatorCondition named by the
// OPERATOR_CONDITION_NAME environment variable. The operator reports
// Upgradeable=False on it while any AddonsLayer is Applying or Pruning or a
// Helm action runs (a release record is pending), so OLM does not replace the
// operator in the middle of a rollout, and True otherwise.
package olm
