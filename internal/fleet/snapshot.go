package fleet

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Snapshot limits. A Secret holds at most 1 MiB; a snapshot is the
// rendered objects of one layer version, compressed. Reading one back is
// bounded as well, whoever wrote the Secret.
const (
	maxSnapshotBytes   = 900 << 10
	maxSnapshotExpands = 64 << 20
)

// Names on snapshot Secrets.
const (
	snapshotLabel          = "kraan.io/layer-snapshot"
	snapshotLayerAnnot     = "kraan.io/layer"
	snapshotVersionAnnot   = "kraan.io/version"
	snapshotRevisionAnnot  = "kraan.io/revision"
	snapshotDigestAnnot    = "kraan.io/digest"
	snapshotDataKey        = "objects.json.gz"
	snapshotNamePrefix     = "kraan-layer-"
	snapshotNameHashLength = 24
)

// Version is a layer version's rendered objects and tests: what a cluster
// runs at that version, to prune from when it moves on and to return to
// when a rollout fails.
type Version struct {
	Objects []*unstructured.Unstructured
	Tests   []*unstructured.Unstructured
}

type versionJSON struct {
	Objects []map[string]any `json:"objects"`
	Tests   []map[string]any `json:"tests,omitempty"`
}

// Snapshots keeps the versions of placed layers in Secrets of the
// operator's namespace, owned by their layer.
type Snapshots struct {
	Client    client.Client
	APIReader client.Reader
	Namespace string
}

// snapshotName is the Secret of layer at t.
func snapshotName(layer string, t Target) string {
	sum := sha256.Sum256([]byte(layer + "\x00" + t.Version + "\x00" + t.Revision))
	return snapshotNamePrefix + hex.EncodeToString(sum[:])[:snapshotNameHashLength]
}

// layerLabelValue identifies a layer within a label value's 63 characters.
func layerLabelValue(layer string) string {
	sum := sha256.Sum256([]byte(layer))
	return hex.EncodeToString(sum[:])[:32]
}

// Save stores v as layer's version t, unless it is stored already.
func (s *Snapshots) Save(ctx context.Context, layer *kraanv1.AddonsLayer, t Target, v Version) error {
	data, digest, err := encodeVersion(v)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: s.Namespace, Name: snapshotName(layer.Name, t)}
	existing := &corev1.Secret{}
	switch err := s.APIReader.Get(ctx, key, existing); {
	case err == nil && existing.Annotations[snapshotDigestAnnot] == digest:
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the snapshot of version %s: %w", t.Version, err)
	}
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{snapshotLabel: layerLabelValue(layer.Name)},
			Annotations: map[string]string{snapshotLayerAnnot: layer.Name, snapshotVersionAnnot: t.Version,
				snapshotRevisionAnnot: t.Revision, snapshotDigestAnnot: digest},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: kraanv1.GroupVersion.String(), Kind: "AddonsLayer",
				Name: layer.Name, UID: layer.UID}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{snapshotDataKey: data},
	}
	//nolint:staticcheck // a typed apply configuration would not carry the owner reference more clearly
	if err := s.Client.Patch(ctx, secret, client.Apply, client.FieldOwner("kraan-operator"), client.ForceOwnership); err != nil {
		return fmt.Errorf("storing the snapshot of version %s: %w", t.Version, err)
	}
	return nil
}

func encodeVersion(v Version) ([]byte, string, error) {
	doc := versionJSON{}
	for _, o := range v.Objects {
		doc.Objects = append(doc.Objects, o.Object)
	}
	for _, o := range v.Tests {
		doc.Tests = append(doc.Tests, o.Object)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the layer's objects: %w", err)
	}
	sum := sha256.Sum256(raw)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	if buf.Len() > maxSnapshotBytes {
		return nil, "", fmt.Errorf("the layer's objects are %d bytes compressed, more than the %d a placed layer's version may be: split the layer",
			buf.Len(), maxSnapshotBytes)
	}
	return buf.Bytes(), hex.EncodeToString(sum[:]), nil
}

// Load reads layer's version t; found is false when it was never stored
// (or was pruned).
func (s *Snapshots) Load(ctx context.Context, layer string, t Target) (v Version, found bool, err error) {
	secret := &corev1.Secret{}
	if err := s.APIReader.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: snapshotName(layer, t)}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return Version{}, false, nil
		}
		return Version{}, false, fmt.Errorf("reading the snapshot of version %s: %w", t.Version, err)
	}
	if secret.Annotations[snapshotLayerAnnot] != layer {
		return Version{}, false, nil
	}
	v, err = decodeVersion(secret.Data[snapshotDataKey])
	if err != nil {
		return Version{}, false, fmt.Errorf("the snapshot of version %s, Secret %s/%s: %w", t.Version, secret.Namespace, secret.Name, err)
	}
	return v, true, nil
}

func decodeVersion(data []byte) (Version, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return Version{}, err
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxSnapshotExpands+1))
	if err != nil {
		return Version{}, err
	}
	if len(raw) > maxSnapshotExpands {
		return Version{}, fmt.Errorf("it expands past %d bytes", maxSnapshotExpands)
	}
	doc := versionJSON{}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Version{}, err
	}
	v := Version{}
	for _, o := range doc.Objects {
		v.Objects = append(v.Objects, &unstructured.Unstructured{Object: o})
	}
	for _, o := range doc.Tests {
		v.Tests = append(v.Tests, &unstructured.Unstructured{Object: o})
	}
	return v, nil
}

// Prune deletes layer's snapshots of versions not in keep.
func (s *Snapshots) Prune(ctx context.Context, layer string, keep []Target) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := s.APIReader.List(ctx, list, client.InNamespace(s.Namespace),
		client.MatchingLabels{snapshotLabel: layerLabelValue(layer)}); err != nil {
		return fmt.Errorf("listing the layer's snapshots: %w", err)
	}
	wanted := map[string]bool{}
	for _, t := range keep {
		wanted[snapshotName(layer, t)] = true
	}
	for i := range list.Items {
		item := &list.Items[i]
		if wanted[item.Name] || item.Annotations[snapshotLayerAnnot] != layer {
			continue
		}
		if err := s.Client.Delete(ctx, item); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the snapshot %s: %w", item.Name, err)
		}
	}
	return nil
}
