// Package plugin is `kubectl kraan`: the commands of the kubectl plugin
// (cmd/kubectl-kraan is only its main). Each command has a file of its own
// here; diff (internal/plugin/diff) and graph (internal/plugin/graph) have
// packages of their own. Run executes a command line in process, so the tests
// run every command against a real control plane and read its output and
// exit code.
//
// The plugin reads and writes the cluster as the user, with kubectl's flag
// set (k8s.io/cli-runtime): --kubeconfig, --context, -n, --as… . Errors are
// one line naming the object and the fix; exit codes follow kubectl diff's
// convention (0 no difference or success, 1 differences, 2 or more errors).
package plugin
