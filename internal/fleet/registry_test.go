package fleet

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestByKey_aFleetClusterWinsOverAClusterAPIClusterOfItsName(t *testing.T) {
	g := NewWithT(t)
	for _, in := range [][]Cluster{
		{{Key: "p/b", Kind: CAPIClusterKind}, {Key: "p/a", Kind: CAPIClusterKind}, {Key: "p/b", Kind: FleetClusterKind}},
		{{Key: "p/b", Kind: FleetClusterKind}, {Key: "p/b", Kind: CAPIClusterKind}, {Key: "p/a", Kind: CAPIClusterKind}},
	} {
		out := byKey(in)
		g.Expect(out).To(HaveLen(2))
		g.Expect(out[0].Key).To(Equal("p/a"))
		g.Expect(out[1]).To(Equal(Cluster{Key: "p/b", Kind: FleetClusterKind}))
	}
}
