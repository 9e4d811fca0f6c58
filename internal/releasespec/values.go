package releasespec

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/redact"
)

// ComposeValues reads every valuesFrom object of hr with reader and merges
// the values. The values of Secrets are recorded in secrets, so that no
// message quotes them.
func ComposeValues(ctx context.Context, reader client.Reader, hr *kraanv1.HelmRelease, secrets *redact.Redactor) (map[string]any, error) {
	sources := make([]helm.ValuesSource, 0, len(hr.Spec.ValuesFrom))
	for _, ref := range hr.Spec.ValuesFrom {
		data, err := valuesData(ctx, reader, hr.Namespace, ref)
		if err != nil {
			return nil, err
		}
		if ref.Kind == "Secret" {
			secrets.AddSecretData(data)
		}
		sources = append(sources, helm.ValuesSource{Ref: ref, Data: data})
	}
	return helm.ComposeValues(sources, hr.Spec.Values)
}

// valuesData returns the data of a ConfigMap or Secret, nil when it does not exist.
func valuesData(ctx context.Context, reader client.Reader, namespace string, ref kraanv1.ValuesReference) (map[string][]byte, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	var err error
	data := map[string][]byte{}
	switch ref.Kind {
	case "Secret":
		secret := &corev1.Secret{}
		if err = reader.Get(ctx, key, secret); err == nil {
			data = secret.Data
		}
	default:
		cm := &corev1.ConfigMap{}
		if err = reader.Get(ctx, key, cm); err == nil {
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
		}
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	}
	return data, nil
}
