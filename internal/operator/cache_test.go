package operator

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// Every ConfigMap and Secret stays in the cache (as metadata): a change of
// any of them may be a HelmRelease's valuesFrom changing, and the in-sync
// check reads Helm's release records there, so that a resync lists no Secret
// and runs no Helm action. A selector on either kind narrows what the
// HelmRelease controller sees too: the cache is configured per kind.
func TestCacheOptions_KeepEveryConfigMapAndSecret(t *testing.T) {
	g := NewWithT(t)
	values := labels.Set{"app": "x"}
	record := labels.Set{"owner": "helm", "name": "r", "status": "deployed", "version": "1"}
	for obj, by := range CacheOptions(nil).ByObject {
		switch obj.(type) {
		case *corev1.ConfigMap, *corev1.Secret:
			if by.Label != nil {
				g.Expect(by.Label.Matches(values)).To(BeTrue(), "a valuesFrom source would not be seen")
				g.Expect(by.Label.Matches(record)).To(BeTrue(), "release records must stay cached")
			}
			g.Expect(by.Field).To(BeNil())
		}
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
