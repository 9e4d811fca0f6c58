package plugin

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func TestPrintFleet_LayerByCluster(t *testing.T) {
	g := NewWithT(t)
	placed := func(name, version string, clusters ...kraanv1.LayerClusterStatus) kraanv1.AddonsLayer {
		return kraanv1.AddonsLayer{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   kraanv1.AddonsLayerSpec{Version: version, Placement: &kraanv1.PlacementSpec{}},
			Status: kraanv1.AddonsLayerStatus{Clusters: clusters, Rollout: &kraanv1.RolloutStatus{Phase: kraanv1.RolloutProgressing, Wave: "main"}}}
	}
	layers := []kraanv1.AddonsLayer{
		placed("base", "v1",
			kraanv1.LayerClusterStatus{Cluster: "fleet/a", State: kraanv1.DeployedState, Version: "v1", DeployedVersion: "v1"},
			kraanv1.LayerClusterStatus{Cluster: "fleet/b", State: kraanv1.UnreachableState, Version: "v1", DeployedVersion: "v0"}),
		placed("apps", "v2",
			kraanv1.LayerClusterStatus{Cluster: "fleet/a", State: kraanv1.ApplyingState, Version: "v2", DeployedVersion: "v1"}),
		{ObjectMeta: metav1.ObjectMeta{Name: "local"}},
	}
	var out bytes.Buffer
	g.Expect(printFleet(t.Context(), &out, placedLayers(layers, nil), false)).To(Succeed())
	lines := strings.Split(out.String(), "\n")
	g.Expect(lines[0]).To(MatchRegexp(`^CLUSTER\s+base\s+apps$`))
	g.Expect(lines[1]).To(MatchRegexp(`^fleet/a\s+v1 Deployed\s+v1→v2 Applying$`))
	g.Expect(lines[2]).To(MatchRegexp(`^fleet/b\s+v0 Unreachable\s+-$`))
	g.Expect(out.String()).NotTo(ContainSubstring("local"), "a layer not placed is not part of the fleet")
	g.Expect(out.String()).To(MatchRegexp(`apps\s+v2\s+Progressing\s+main`))
}
