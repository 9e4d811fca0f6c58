package operator

import (
	"reflect"
	"strings"
	"testing"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/releasespec"
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
// the chart-backed controllers' charts render — so the watches that need a
// labelled few of a kind use caches of their own
// (kit.NewSelectedMetadataCache). Nor does it name a kind at all: a
// per-kind entry needs the kind's REST mapping when the manager is made,
// and a cluster without Flux has none for Flux's sources.
func TestCacheOptions_SelectNoKind(t *testing.T) {
	g := NewWithT(t)
	for _, namespaces := range [][]string{nil, {"a"}} {
		opts := CacheOptions(namespaces)
		g.Expect(opts.ByObject).To(BeEmpty())
		g.Expect(opts.DefaultLabelSelector).To(BeNil())
		g.Expect(opts.DefaultFieldSelector).To(BeNil())
	}
}

// A Flux source that serves an artifact is cached with its status only:
// its spec is whatever the tenant wrote (spec.ignore is free text), and
// nothing of the operator reads it.
func TestCacheOptions_ArtifactSourcesKeepTheirStatus(t *testing.T) {
	g := NewWithT(t)
	artifact := &fluxmeta.Artifact{Revision: "main@sha1:abc", Digest: "sha256:def", URL: "http://source/a.tar.gz"}
	ready := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	meta := metav1.ObjectMeta{Name: "repo", Namespace: "ns", Generation: 3, Annotations: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	sources := map[client.Object]client.Object{
		&sourcev1.GitRepository{ObjectMeta: meta, Spec: sourcev1.GitRepositorySpec{URL: "https://git", Ignore: ptr.To(strings.Repeat("x", 1<<20))},
			Status: sourcev1.GitRepositoryStatus{ObservedGeneration: 3, Artifact: artifact, Conditions: ready}}: &sourcev1.GitRepository{},
		&sourcev1.OCIRepository{ObjectMeta: meta, Spec: sourcev1.OCIRepositorySpec{URL: "oci://x"},
			Status: sourcev1.OCIRepositoryStatus{ObservedGeneration: 3, Artifact: artifact, Conditions: ready}}: &sourcev1.OCIRepository{},
		&sourcev1.Bucket{ObjectMeta: meta, Spec: sourcev1.BucketSpec{BucketName: "b"},
			Status: sourcev1.BucketStatus{ObservedGeneration: 3, Artifact: artifact, Conditions: ready}}: &sourcev1.Bucket{},
		&sourcev1.HelmChart{ObjectMeta: meta, Spec: sourcev1.HelmChartSpec{Chart: "c"},
			Status: sourcev1.HelmChartStatus{ObservedGeneration: 3, Artifact: artifact, Conditions: ready}}: &sourcev1.HelmChart{},
	}
	transform := CacheOptions(nil).DefaultTransform
	for in := range sources {
		out, err := transform(in)
		g.Expect(err).NotTo(HaveOccurred())
		src := out.(releasespec.ArtifactSource)
		g.Expect(src.GetArtifact()).To(Equal(artifact))
		g.Expect(src.GetGeneration()).To(BeEquivalentTo(3))
		g.Expect(src.GetAnnotations()).To(BeEmpty())
		g.Expect(src.GetManagedFields()).To(BeEmpty())
		g.Expect(reflect.ValueOf(out).Elem().FieldByName("Spec").IsZero()).To(BeTrue(), "%T keeps its spec", in)
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
