package helm

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestEngine_Run_chartNameChange: a release moved to a chart of another
// name is uninstalled and installed anew (revision 1 of the new chart, the
// old chart's objects gone) when the request says Reinstall, Flux's
// default, and upgraded in place (revision 2, objects both charts render
// kept) otherwise.
func TestEngine_Run_chartNameChange(t *testing.T) {
	env, engine := startEngine(t)
	first := templatedChart("first", map[string]string{
		"kept.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\ndata: {chart: first}\n",
		"old.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\ndata: {chart: first}\n",
	})
	second := templatedChart("second", map[string]string{
		"kept.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\ndata: {chart: second}\n",
	})
	for _, tc := range []struct {
		name      string
		reinstall bool
		revision  int
	}{
		{name: "Reinstall", reinstall: true, revision: 1},
		{name: "InPlaceUpdate", reinstall: false, revision: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := "rename-" + map[bool]string{true: "reinstall", false: "inplace"}[tc.reinstall]
			testenv.CreateNamespace(t, env.Client, ns)
			req := noWaitRequest(ns, first, PostRender{}, "")
			req.ReinstallOnChartNameChange = tc.reinstall
			_, err := engine.Run(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			keptUID := liveConfigMap(g, env.Client, ns, "kept").UID

			req.Desired = noWaitRequest(ns, second, PostRender{}, "").Desired
			res, err := engine.Run(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Latest.Version).To(Equal(tc.revision))
			g.Expect(res.Latest.Chart.Metadata.Name).To(Equal("second"))
			kept := liveConfigMap(g, env.Client, ns, "kept")
			g.Expect(kept.Data).To(HaveKeyWithValue("chart", "second"))
			var actions []Action
			for _, s := range res.Taken {
				g.Expect(s.Err).NotTo(HaveOccurred())
				actions = append(actions, s.Action)
			}
			if tc.reinstall {
				g.Expect(actions).To(Equal([]Action{ActionUninstall, ActionInstall}))
				g.Expect(res.Taken[0].Detail).To(ContainSubstring("the chart changed from first to second"))
				g.Expect(res.Taken[0].Reinstall).To(BeTrue(), "the uninstall would read as a remediation")
				g.Expect(kept.UID).NotTo(Equal(keptUID), "the object was not created anew")
				return
			}
			g.Expect(actions).To(Equal([]Action{ActionUpgrade}))
			g.Expect(kept.UID).To(Equal(keptUID), "the object was replaced by an in-place update")
		})
	}
}
