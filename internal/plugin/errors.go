package plugin

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// getError says what went wrong reading the object a command is about.
func getError(kind, namespace, name string, err error) error {
	if apierrors.IsNotFound(err) {
		if kind == layerKind {
			return notFound("layer", namespace, name)
		}
		return notFound("helmrelease", namespace, name)
	}
	if namespace != "" {
		return fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	return fmt.Errorf("reading %s %s: %w", kind, name, err)
}
