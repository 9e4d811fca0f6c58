package operator

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Nothing reads managedFields: the cache drops them to save memory.
func TestCacheOptions_DropManagedFields(t *testing.T) {
	g := NewWithT(t)
	for _, namespaces := range [][]string{nil, {"a"}} {
		transform := CacheOptions(namespaces).DefaultTransform
		g.Expect(transform).NotTo(BeNil())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
		out, err := transform(cm)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out.(*corev1.ConfigMap).ManagedFields).To(BeEmpty())
	}
}

// The manager's cache selects no kind: a selector there applies to every
// watch of the kind — Helm's release records among the Secrets, whatever
// the chart-backed controllers' charts render, the Habitat controller's
// StatefulSets — so the watches that need a labelled few of a kind use
// caches of their own (kit.NewSelectedMetadataCache).
func TestCacheOptions_SelectNoKind(t *testing.T) {
	g := NewWithT(t)
	for _, namespaces := range [][]string{nil, {"a"}} {
		opts := CacheOptions(namespaces)
		g.Expect(opts.ByObject).To(BeEmpty())
		g.Expect(opts.DefaultLabelSelector).To(BeNil())
		g.Expect(opts.DefaultFieldSelector).To(BeNil())
	}
}

// Of metadata, the cache keeps what the operator reads (names, version,
// labels, deletion) and drops the rest.
func TestCacheOptions_SlimMetadata(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "sh.helm.release.v1.r.v1", Namespace: "apps", UID: "u", ResourceVersion: "7", Generation: 2,
			Labels:            map[string]string{"owner": "helm", "name": "r", "version": "1"},
			DeletionTimestamp: &now,
			Annotations:       map[string]string{"meta.helm.sh/release-name": "r"},
			OwnerReferences:   []metav1.OwnerReference{{Name: "o"}},
			Finalizers:        []string{"f"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "helm"}},
		},
	}
	out, err := CacheOptions(nil).DefaultTransform(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(&metav1.PartialObjectMetadata{TypeMeta: in.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: in.Name, Namespace: in.Namespace, UID: in.UID, ResourceVersion: in.ResourceVersion, Generation: 2,
		Labels: in.Labels, DeletionTimestamp: &now,
	}}))
}
