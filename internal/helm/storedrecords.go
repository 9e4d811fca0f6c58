package helm

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// maxRecordJSON bounds the decompressed record kept per Secret: Secrets hold
// at most 1 MiB, which gzip rarely grows past a few tens.
const maxRecordJSON = 64 << 20

// storedRecords is the Secrets client of release storage that remembers the
// JSON each record Secret it read holds, as stored. Records the operator
// signed under Helm 3 are verified against those bytes: Helm 4 decodes them
// into types that encode differently (times, chart files), so re-encoding
// them no longer gives the bytes that were signed.
type storedRecords struct {
	corev1client.SecretInterface
	mu   sync.Mutex
	json map[string][]byte
}

func newStoredRecords(secrets corev1client.SecretInterface) *storedRecords {
	return &storedRecords{SecretInterface: secrets, json: map[string][]byte{}}
}

// Get implements corev1client.SecretInterface, keeping the record's JSON.
func (s *storedRecords) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	secret, err := s.SecretInterface.Get(ctx, name, opts)
	if err == nil {
		s.keep(secret)
	}
	return secret, err
}

// List implements corev1client.SecretInterface, keeping each record's JSON.
func (s *storedRecords) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	list, err := s.SecretInterface.List(ctx, opts)
	if err == nil {
		for i := range list.Items {
			s.keep(&list.Items[i])
		}
	}
	return list, err
}

// keep labels secret, in memory, with its own name (recordKeyLabel: the
// signing driver checks a record is stored where it was signed for, and a
// label a tenant set is overwritten here), then decodes its data as Helm's
// Secrets driver does (base64, then gzip when compressed) and remembers it
// by the Secret's name.
func (s *storedRecords) keep(secret *corev1.Secret) {
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[recordKeyLabel] = secret.Name
	delete(secret.Labels, recordWriterLabel)
	delete(secret.Labels, recordWrittenAtLabel)
	if manager, at := lastWriter(secret.ManagedFields); manager != "" {
		secret.Labels[recordWriterLabel] = manager
		secret.Labels[recordWrittenAtLabel] = at
	}
	data, err := base64.StdEncoding.DecodeString(string(secret.Data["release"]))
	if err != nil {
		return
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b, 0x08}) {
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		if data, err = io.ReadAll(io.LimitReader(r, maxRecordJSON)); err != nil {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.json[secret.Name] = data
}

// stored is the JSON of the record Secret name as last read; nil when it
// was not read.
func (s *storedRecords) stored(name string) []byte {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.json[name]
}

// lastWriter is the field manager that wrote an object last, and when (RFC
// 3339), from its managed fields: "Helm" for the Helm CLI, "helm-controller"
// for Flux, "kubectl-edit" for a hand edit.
func lastWriter(fields []metav1.ManagedFieldsEntry) (manager, at string) {
	var latest time.Time
	for _, f := range fields {
		var t time.Time
		if f.Time != nil {
			t = f.Time.Time
		}
		if manager == "" || !t.Before(latest) {
			manager, latest = f.Manager, t
		}
	}
	if manager == "" {
		return "", ""
	}
	if latest.IsZero() {
		return manager, ""
	}
	return manager, latest.UTC().Format(time.RFC3339)
}
