package helmreleases_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// renamedSmallChart is the small chart published under another name,
// "small-renamed", with the same objects and selectors: a chart renamed
// upstream, as users meet it.
func renamedSmallChart(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "small-renamed")
	g.Expect(os.CopyFS(dir, os.DirFS(chartrepo.ChartDir("small")))).To(Succeed())
	rewrite := func(file, old, replacement string) {
		path := filepath.Join(dir, file)
		data, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(data)).To(ContainSubstring(old))
		g.Expect(os.WriteFile(path, []byte(strings.Replace(string(data), old, replacement, 1)), 0o600)).To(Succeed())
	}
	rewrite("Chart.yaml", "name: small\n", "name: small-renamed\n")
	// A Deployment's selector cannot change: the renamed chart keeps it.
	rewrite(filepath.Join("templates", "_helpers.tpl"), "app.kubernetes.io/name: {{ .Chart.Name }}", "app.kubernetes.io/name: small")
	return dir
}

// TestHelmRelease_ChartNameChange: a release moved to a chart of another
// name is uninstalled and installed anew under Reinstall, Flux's default —
// Helm's history starts again at revision 1 and the objects are created
// anew — and upgraded under InPlaceUpdate: revision 2, the same objects.
func TestHelmRelease_ChartNameChange(t *testing.T) {
	renamed := renamedSmallChart(t)
	for _, tc := range []struct {
		strategy kraanv1.ChartNameChangeStrategy
		revision int
		action   kraanv1.ReleaseAction
	}{
		{strategy: kraanv1.ChartNameChangeStrategyReinstall, revision: 1, action: kraanv1.ReleaseActionInstall},
		{strategy: "", revision: 1, action: kraanv1.ReleaseActionInstall}, // Reinstall by default
		{strategy: kraanv1.ChartNameChangeStrategyInPlaceUpdate, revision: 2, action: kraanv1.ReleaseActionUpgrade},
	} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			repo := chartrepo.NewHTTPRepo(t)
			repo.Add(chartrepo.ChartDir("small"), "0.1.0")
			repo.Add(renamed, "0.1.0")
			g.Expect(k8s.Create(context.Background(), newHelmRepository(ns, "charts", repo.URL))).To(Succeed())
			newRelease(t, ns, "app", "small", withValues(map[string]any{"message": "one"}), func(hr *kraanv1.HelmRelease) {
				if tc.strategy != "" {
					hr.Spec.Upgrade = &kraanv1.Upgrade{ChartNameChangeStrategy: tc.strategy}
				}
			})
			readyAt(t, ns, "app")
			uid := deployment(g, ns, "app").UID

			update(t, ns, "app", func(hr *kraanv1.HelmRelease) { hr.Spec.Chart.Spec.Chart = "small-renamed" })
			NewWithT(t).Eventually(func(g Gomega) {
				hr := get(g, ns, "app")
				g.Expect(hr.Status.History).NotTo(BeEmpty())
				g.Expect(hr.Status.History[0].ChartName).To(Equal("small-renamed"))
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			hr := readyAt(t, ns, "app")
			g.Expect(hr.Status.History[0].Version).To(Equal(tc.revision))
			g.Expect(hr.Status.History[0].Action).To(Equal(tc.action))
			g.Expect(configMapData(g, ns, "app")).To(HaveKeyWithValue("message", "one"))
			if tc.revision == 1 {
				g.Expect(helmRevisions(g, ns, "app")).To(ConsistOf("1=deployed"), "the old chart's history was kept")
				g.Expect(deployment(g, ns, "app").UID).NotTo(Equal(uid), "the Deployment was not installed anew")
				g.Expect(eventMessages(g, ns, "app", kraanv1.ReasonUninstallSucceeded)).To(ContainElement(
					ContainSubstring("the chart changed from small to small-renamed")))
				return
			}
			g.Expect(helmRevisions(g, ns, "app")).To(ConsistOf("1=superseded", "2=deployed"))
			g.Expect(deployment(g, ns, "app").UID).To(Equal(uid), "the Deployment was replaced by an in-place update")
		})
	}
}
