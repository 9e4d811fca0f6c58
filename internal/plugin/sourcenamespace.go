package plugin

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fallbackSourceNamespace is used when no operator Deployment can be read:
// where Flux installs its sources.
const fallbackSourceNamespace = "flux-system"

// defaultSourceNamespace is the namespace the running operator reads a
// layer's source from when spec.source.namespace is empty: its
// --default-source-namespace (flag or KRAAN_DEFAULT_SOURCE_NAMESPACE), else
// its own namespace, as the operator itself defaults. The plugin asks the
// operator instead of guessing, so a preview reads the source the operator
// reads. flag, when set, wins.
func defaultSourceNamespace(ctx context.Context, s *session, flag string) string {
	if flag != "" {
		return flag
	}
	deployments := &appsv1.DeploymentList{}
	if err := s.client.List(ctx, deployments, client.MatchingLabels{operatorLabel: operatorName}); err != nil || len(deployments.Items) == 0 {
		return fallbackSourceNamespace
	}
	return sourceNamespaceOf(&deployments.Items[0])
}

// sourceNamespaceOf reads the operator's default source namespace from its
// Deployment: the flag in its arguments, then the environment variable, then
// the Deployment's namespace.
func sourceNamespaceOf(d *appsv1.Deployment) string {
	const flag = "--default-source-namespace"
	for _, c := range d.Spec.Template.Spec.Containers {
		args := append(append([]string{}, c.Command...), c.Args...)
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, flag+"="); ok && v != "" {
				return v
			}
			if a == flag && i+1 < len(args) && args[i+1] != "" {
				return args[i+1]
			}
		}
		for _, e := range c.Env {
			if e.Name == "KRAAN_DEFAULT_SOURCE_NAMESPACE" && e.Value != "" {
				return e.Value
			}
		}
	}
	return d.Namespace
}
