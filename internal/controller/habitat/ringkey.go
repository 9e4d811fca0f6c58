package habitat

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
)

// ringKeyLength is the size of a Habitat symmetric ring key (a secretbox key).
const ringKeyLength = 32

// GeneratedRingKeySecretName is the Secret holding the generated key of a
// ring: one per ring and namespace, since every member of a ring needs the
// same key. Keep in sync with helm-charts/habitat/templates/_helpers.tpl.
func GeneratedRingKeySecretName(ring string) string {
	return "hab-ring-key." + ring
}

// NewRingKey returns a ring key as `hab ring key generate` writes it — the
// file name and its content, `SYM-SEC-1`, the key name
// `<ring>-<YYYYMMDDhhmmss>`, a blank line, the base64 key.
func NewRingKey(ring string, now time.Time) (fileName string, content []byte, err error) {
	key := make([]byte, ringKeyLength)
	if _, err := rand.Read(key); err != nil {
		return "", nil, fmt.Errorf("generating ring key: %w", err)
	}
	name := ring + "-" + now.UTC().Format("20060102150405")
	content = fmt.Appendf(nil, "SYM-SEC-1\n%s\n\n%s", name, base64.StdEncoding.EncodeToString(key))
	return name + ".sym.key", content, nil
}

// reconcileRingKey records the ring key Secret in use and, when the spec asks
// for a generated key, creates it once: an existing key is never replaced, so
// upgrades and restarts keep the ring's members able to talk.
func (r *Reconciler) reconcileRingKey(ctx context.Context, sc *habitatScope, obj *habitatv1.Habitat) error {
	svc := obj.Spec.Service
	sc.ringKeySecret = svc.RingSecretName
	if !svc.GenerateRingKey {
		return nil
	}
	sc.ringKeySecret = GeneratedRingKeySecretName(svc.Ring)
	// Read from the API server: a typed read through the manager's client
	// would start a cache of every Secret of the cluster, values included.
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: sc.ringKeySecret}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return r.createRingKey(ctx, obj, sc.ringKeySecret)
	case err != nil:
		return fmt.Errorf("reading ring key: %w", err)
	}
	return r.addRingKeyOwner(ctx, secret, obj)
}

func (r *Reconciler) createRingKey(ctx context.Context, obj *habitatv1.Habitat, name string) error {
	file, content, err := NewRingKey(obj.Spec.Service.Ring, time.Now())
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: obj.Namespace, Name: name,
			Labels:          map[string]string{PeerGroupLabel: PeerGroup(obj)},
			OwnerReferences: []metav1.OwnerReference{habitatOwnerRef(obj)},
		},
		Data: map[string][]byte{file: content},
	}
	if err := r.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ring key: %w", err)
	}
	return nil
}

// addRingKeyOwner makes every Habitat of the ring an owner of its key, so
// the key goes only with the ring's last Habitat.
func (r *Reconciler) addRingKeyOwner(ctx context.Context, secret *corev1.Secret, obj *habitatv1.Habitat) error {
	if slices.ContainsFunc(secret.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == obj.UID }) {
		return nil
	}
	secret.OwnerReferences = append(secret.OwnerReferences, habitatOwnerRef(obj))
	if err := r.Update(ctx, secret); err != nil {
		return fmt.Errorf("adding owner to ring key: %w", err)
	}
	return nil
}

func habitatOwnerRef(h *habitatv1.Habitat) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: habitatv1.GroupVersion.String(), Kind: "Habitat",
		Name: h.Name, UID: h.UID, BlockOwnerDeletion: ptr.To(false),
	}
}
