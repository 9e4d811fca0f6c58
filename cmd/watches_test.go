package main

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/controller/habitat"
)

func TestOptions_LoadWatches_InvalidEntryNamed(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(path, []byte("- {group: a.io, version: v1, kind: Widget}\n"), 0o600)).To(Succeed())
	_, err := (&options{watchesFile: path}).loadWatches()
	g.Expect(err).To(MatchError(ContainSubstring("entry 1 (a.io/v1, Kind=Widget): chart is required")))
}

func TestOptions_LoadWatches_ExplicitMissingFileFails(t *testing.T) {
	g := NewWithT(t)
	_, err := (&options{watchesFile: filepath.Join(t.TempDir(), "nope.yaml")}).loadWatches()
	g.Expect(err).To(MatchError(ContainSubstring("reading watches file")))
}

func TestOptions_LoadWatches_RepositoryFile(t *testing.T) {
	g := NewWithT(t)
	list, err := (&options{watchesFile: filepath.Join("..", "watches.yaml")}).loadWatches()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(1))
	g.Expect(list[0].Kind).To(Equal("Habitat"))
}

func TestOptions_Namespaces(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{name: "all", value: "", want: nil},
		{name: "one", value: "shop", want: []string{"shop"}},
		{name: "several", value: "shop, billing,,", want: []string{"shop", "billing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := &options{watchNamespace: tt.value}
			g.Expect(o.namespaces()).To(Equal(tt.want))
			g.Expect(o.cacheOptions().DefaultNamespaces).To(HaveLen(len(tt.want)))
		})
	}
}

// Nothing reads managedFields: the cache drops them to save memory.
func TestOptions_CacheDropsManagedFields(t *testing.T) {
	g := NewWithT(t)
	transform := (&options{}).cacheOptions().DefaultTransform
	g.Expect(transform).NotTo(BeNil())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err := transform(cm)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*corev1.ConfigMap).ManagedFields).To(BeEmpty())
	g.Expect((&options{watchNamespace: "a"}).cacheOptions().DefaultTransform).NotTo(BeNil())
}

// Only the Habitat controller's peer lists are read from the cache: no other
// ConfigMap of the cluster is cached.
func TestOptions_CacheHoldsOnlyPeerListConfigMaps(t *testing.T) {
	g := NewWithT(t)
	var selector labels.Selector
	for obj, by := range (&options{}).cacheOptions().ByObject {
		if _, ok := obj.(*corev1.ConfigMap); ok {
			selector = by.Label
		}
	}
	g.Expect(selector).NotTo(BeNil())
	g.Expect(selector.Matches(labels.Set{habitat.PeerGroupLabel: "ring.shop"})).To(BeTrue())
	g.Expect(selector.Matches(labels.Set{"app": "x"})).To(BeFalse())
}

// Helm's release records stay in the cache of Secret metadata: the in-sync
// check reads them there, so that a resync lists no Secret and runs no Helm
// action.
func TestOptions_CacheKeepsHelmReleaseRecords(t *testing.T) {
	g := NewWithT(t)
	record := labels.Set{"owner": "helm", "name": "r", "status": "deployed", "version": "1"}
	for obj, by := range (&options{}).cacheOptions().ByObject {
		if _, ok := obj.(*corev1.Secret); ok && by.Label != nil {
			g.Expect(by.Label.Matches(record)).To(BeTrue(), "release records must stay cached")
		}
	}
}
