package habitat

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
)

// Companions are the objects this controller makes for a Habitat besides
// its chart's release, which it owns: the peer group's ConfigMap and the
// generated ring key Secret. The chart-backed controller orphans them with
// the release's objects when the Habitat kind is removed (its CRD deleted),
// so that the ring keeps its key and peers.
func Companions(obj *unstructured.Unstructured) []client.Object {
	h := &habitatv1.Habitat{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, h); err != nil {
		return nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: PeerConfigMapName(PeerGroup(h))}}
	cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	objs := []client.Object{cm}
	if h.Spec.Service.GenerateRingKey {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: GeneratedRingKeySecretName(h.Spec.Service.Ring)}}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		objs = append(objs, secret)
	}
	return objs
}
