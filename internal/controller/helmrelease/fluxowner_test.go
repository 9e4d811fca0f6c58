package helmrelease

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// noFluxReader answers every list as a cluster without Flux's CRD does, and
// counts the lists.
type noFluxReader struct {
	client.Reader
	lists int
}

func (r *noFluxReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	r.lists++
	return &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}}
}

// TestAwaitFluxHandover_RemembersThatFluxIsAbsent: on a cluster without
// Flux's HelmRelease kind each list is a discovery request (the bench counted
// two per release); the absence is remembered for the optional-watch
// interval, then asked again.
func TestAwaitFluxHandover_RemembersThatFluxIsAbsent(t *testing.T) {
	g := NewWithT(t)
	reader := &noFluxReader{}
	r := &Reconciler{APIReader: reader}
	target := helm.Target{ReleaseName: "app", StorageNamespace: "storage"}
	for range 3 {
		g.Expect(r.awaitFluxHandover(context.Background(), "team", target)).To(Succeed())
	}
	g.Expect(reader.lists).To(Equal(1), "one list, then the remembered answer")

	r.fluxKindMissing.Store(time.Now().Add(-kit.OptionalWatchInterval).UnixNano())
	g.Expect(r.awaitFluxHandover(context.Background(), "team", target)).To(Succeed())
	g.Expect(reader.lists).To(Equal(2), "asked again after the interval")
}
