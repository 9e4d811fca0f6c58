package helm

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// unreachableCluster is a cluster at an address nothing answers on: making its
// clients sends no request.
func unreachableCluster(key, owner string) *Cluster {
	return &Cluster{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Key: key, Owner: owner}
}

func stopped(cc *clusterClients) bool {
	cc.apis.mu.Lock()
	defer cc.apis.mu.Unlock()
	return cc.apis.stopped
}

func TestRemoteClusters_get_rotationRetiresTheReplacedKubeconfig(t *testing.T) {
	g := NewWithT(t)
	r := &remoteClusters{}
	first, err := r.get(unreachableCluster("v1", "apps/edge"))
	g.Expect(err).NotTo(HaveOccurred())
	again, err := r.get(unreachableCluster("v1", "apps/edge"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(first), "one kubeconfig, one set of clients")

	second, err := r.get(unreachableCluster("v2", "apps/edge"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).NotTo(BeIdenticalTo(first))
	g.Expect(stopped(first)).To(BeTrue(), "the replaced kubeconfig's clients are stopped")
	g.Expect(stopped(second)).To(BeFalse())
	g.Expect(r.len()).To(Equal(1))
}

func TestRemoteClusters_get_sharedKubeconfigKeptWhileUsed(t *testing.T) {
	g := NewWithT(t)
	r := &remoteClusters{}
	shared, err := r.get(unreachableCluster("v1", "apps/a"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.get(unreachableCluster("v1", "apps/b"))
	g.Expect(err).NotTo(HaveOccurred())

	_, err = r.get(unreachableCluster("v2", "apps/a"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stopped(shared)).To(BeFalse(), "apps/b still uses v1")
	g.Expect(r.len()).To(Equal(2))

	r.forget("apps/b")
	g.Expect(stopped(shared)).To(BeTrue(), "nobody uses v1 any more")
	g.Expect(r.len()).To(Equal(1))
	r.forget("apps/a")
	g.Expect(r.len()).To(Equal(0))
	r.forget("apps/unknown") // nothing to do
}

func TestRemoteClusters_get_evictsTheLeastRecentlyUsed(t *testing.T) {
	g := NewWithT(t)
	r := &remoteClusters{}
	all := map[string]*clusterClients{}
	for i := range maxRemoteClusters {
		key := fmt.Sprint("k", i)
		cc, err := r.get(unreachableCluster(key, "apps/"+key))
		g.Expect(err).NotTo(HaveOccurred())
		all[key] = cc
	}
	// k0 is used again: k1 is now the least recently used.
	_, err := r.get(unreachableCluster("k0", "apps/k0"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.get(unreachableCluster("new", "apps/new"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.len()).To(Equal(maxRemoteClusters))
	g.Expect(stopped(all["k1"])).To(BeTrue())
	g.Expect(stopped(all["k0"])).To(BeFalse())

	again, err := r.get(unreachableCluster("k1", "apps/k1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).NotTo(BeIdenticalTo(all["k1"]), "an evicted cluster's clients are made again")
	g.Expect(stopped(again)).To(BeFalse())
}
