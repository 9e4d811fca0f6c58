package helm

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestEngine_Close_StopsWhatItRunsInTheBackground: the engine watches the
// APIs of every cluster it acts on, its own and the remote ones, for as long
// as it lives. Close stops those watches and forgets the remote clusters;
// until it does, an API server the engine talked to cannot stop (envtest
// waited 20 seconds for it on each test).
func TestEngine_Close_StopsWhatItRunsInTheBackground(t *testing.T) {
	g := NewWithT(t)
	env, engine := startEngine(t)
	remote, err := engine.clientsFor(Target{Cluster: &Cluster{Config: env.Config, Key: "remote", Owner: "ns/release"}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, cc := range []*clusterClients{engine.local, remote} {
		g.Expect(cc.apis.capabilities()).NotTo(BeNil(), "the watches on the cluster's APIs run")
		g.Expect(cc.apis.factory).NotTo(BeNil())
	}

	engine.Close()
	for name, cc := range map[string]*clusterClients{"local": engine.local, "remote": remote} {
		g.Expect(cc.apis.factory).To(BeNil(), "%s: watches stopped", name)
		g.Expect(cc.apis.capabilities()).To(BeNil(), "%s: nothing cached is served once unwatched", name)
	}
	g.Expect(engine.remotes.len()).To(BeZero(), "the remote cluster is forgotten")
}
