package operator

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultRecordKeySecret is the name of the Secret, in the operator's
// namespace, holding the key that signs release records.
const DefaultRecordKeySecret = "kraan-release-record-key"

// recordKeyField is the Secret's key holding the signing key.
const recordKeyField = "key"

// recordKeyLength is the bytes of a generated key: HMAC-SHA256's block is 64
// bytes; 32 random bytes are its full strength.
const recordKeyLength = 32

// minRecordKeyLength refuses a key too short to resist guessing, e.g. a
// Secret someone filled by hand with a word.
const minRecordKeyLength = 16

// recordKey returns the key that signs release records: opts.RecordKey when
// set (tests), otherwise the one in opts.RecordKeySecret, created with a
// random key when it does not exist. The key's Secret lives in the
// operator's namespace, which tenants cannot read: whoever reads it can sign
// records the operator trusts.
func recordKey(ctx context.Context, config *rest.Config, opts Options) ([]byte, error) {
	if len(opts.RecordKey) > 0 {
		return opts.RecordKey, nil
	}
	ref := opts.RecordKeySecret
	if ref.Name == "" || ref.Namespace == "" {
		return nil, fmt.Errorf("the Secret holding the release record key needs a name and a namespace, got %q (set --release-record-key-secret and --release-record-key-namespace)", ref.String())
	}
	c, err := client.New(config, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating a client to read the release record key: %w", err)
	}
	return loadOrCreateRecordKey(ctx, c, ref)
}

// loadOrCreateRecordKey reads the key of Secret ref, creating the Secret with
// a random key when it does not exist. Replicas starting together race on
// the create; the loser reads the winner's key.
func loadOrCreateRecordKey(ctx context.Context, c client.Client, ref types.NamespacedName) ([]byte, error) {
	for range 2 {
		secret := &corev1.Secret{}
		err := c.Get(ctx, ref, secret)
		if err == nil {
			return keyOf(secret, ref)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the release record key Secret %s: %w", ref, err)
		}
		key := make([]byte, recordKeyLength)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("generating a release record key: %w", err)
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "kraan-operator"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{recordKeyField: key},
		}
		err = c.Create(ctx, secret)
		if err == nil {
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the release record key Secret %s: %w", ref, err)
		}
	}
	return nil, fmt.Errorf("the release record key Secret %s was created and deleted while the operator read it", ref)
}

// keyOf is the key Secret ref holds, when it is long enough.
func keyOf(secret *corev1.Secret, ref types.NamespacedName) ([]byte, error) {
	key := secret.Data[recordKeyField]
	if len(key) < minRecordKeyLength {
		return nil, fmt.Errorf("the release record key Secret %s must hold at least %d bytes under %q, it holds %d",
			ref, minRecordKeyLength, recordKeyField, len(key))
	}
	return key, nil
}
