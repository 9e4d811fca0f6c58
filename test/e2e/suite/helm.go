package suite

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HelmRevisions lists the revisions Helm storage (Secrets labelled
// owner=helm) holds for a release in namespace, as their version labels.
func HelmRevisions(ctx context.Context, c client.Reader, namespace, release string) ([]string, error) {
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(namespace),
		client.MatchingLabels{"owner": "helm", "name": release}); err != nil {
		return nil, err
	}
	revisions := make([]string, 0, len(secrets.Items))
	for _, s := range secrets.Items {
		revisions = append(revisions, s.Labels["version"])
	}
	return revisions, nil
}
