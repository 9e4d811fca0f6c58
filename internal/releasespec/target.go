package releasespec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// maxReleaseNameLength is Helm's limit: release names end up in label values.
const maxReleaseNameLength = 53

// releaseNameOf is spec.releaseName, or `[targetNamespace-]name` shortened
// with a hash past 53 characters, as Flux does.
func releaseNameOf(hr *kraanv1.HelmRelease) string {
	if hr.Spec.ReleaseName != "" {
		return hr.Spec.ReleaseName
	}
	name := hr.Name
	if hr.Spec.TargetNamespace != "" {
		name = hr.Spec.TargetNamespace + "-" + hr.Name
	}
	if len(name) <= maxReleaseNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
}

// TargetOf is where hr's release lives and, with defaultServiceAccount
// (--default-service-account) when hr names none, as whom the operator acts.
func TargetOf(hr *kraanv1.HelmRelease, defaultServiceAccount string) helm.Target {
	t := helm.Target{
		ReleaseName:      releaseNameOf(hr),
		Namespace:        hr.Namespace,
		StorageNamespace: hr.Namespace,
		Tenant:           hr.Namespace,
		Owner:            hr.UID,
		FreshClients:     hr.Spec.PersistentClient != nil && !*hr.Spec.PersistentClient,
	}
	if hr.Spec.TargetNamespace != "" {
		t.Namespace = hr.Spec.TargetNamespace
	}
	if hr.Spec.StorageNamespace != "" {
		t.StorageNamespace = hr.Spec.StorageNamespace
	}
	sa := hr.Spec.ServiceAccountName
	if sa == "" && hr.Spec.KubeConfig == nil {
		// The default account is one of this cluster; a remote cluster's
		// kubeconfig carries its own identity, as in Flux.
		sa = defaultServiceAccount
	}
	if sa != "" {
		t.Impersonate = "system:serviceaccount:" + hr.Namespace + ":" + sa
	}
	return t
}

// Keys a kubeConfig Secret holds the kubeconfig under when secretRef.key is
// empty, tried in order, as Flux does.
var defaultKubeConfigKeys = []string{"value", "value.yaml"}

// ClusterOf reads the remote cluster of hr's spec.kubeConfig from its
// Secret; nil when hr has none. A Secret that is missing, lacks the key or
// holds a kubeconfig the operator refuses stalls the release until the Secret
// changes (the watch on Secrets brings it back); messages name the Secret and
// key, never the content.
func ClusterOf(ctx context.Context, reader client.Reader, hr *kraanv1.HelmRelease) (*helm.Cluster, error) {
	ref := hr.Spec.KubeConfig
	if ref == nil || ref.SecretRef == nil {
		return nil, nil
	}
	key := client.ObjectKey{Namespace: hr.Namespace, Name: ref.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		err = fmt.Errorf("reading the kubeConfig Secret %s: %w", key, err)
		if apierrors.IsNotFound(err) {
			return nil, outcome.Terminal(kraanv1.ReasonKubeConfigError, err)
		}
		return nil, outcome.Transient(kraanv1.ReasonKubeConfigError, err)
	}
	keys := defaultKubeConfigKeys
	if ref.SecretRef.Key != "" {
		keys = []string{ref.SecretRef.Key}
	}
	for _, k := range keys {
		data, ok := secret.Data[k]
		if !ok {
			continue
		}
		cluster, err := helm.ClusterFromKubeconfig(data)
		if err != nil {
			return nil, outcome.Terminal(kraanv1.ReasonKubeConfigError, fmt.Errorf("kubeConfig Secret %s, key %q: %w", key, k, err))
		}
		cluster.Owner = client.ObjectKeyFromObject(hr).String()
		return cluster, nil
	}
	missing := fmt.Sprintf("kubeConfig Secret %s has no key %q", key, keys[0])
	if len(keys) > 1 {
		missing += fmt.Sprintf(" (nor %q)", keys[1])
	}
	return nil, outcome.Terminal(kraanv1.ReasonKubeConfigError, errors.New(missing))
}
