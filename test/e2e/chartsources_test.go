package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// TestHelmRelease_ChartSources: HelmReleases read their charts from Flux
// sources, and a change of a source reaches the releases it concerns at once,
// not at their interval (an hour here), while the others are left alone.
func TestHelmRelease_ChartSources(t *testing.T) {
	h := startHarness(t)
	t.Run("chartRef to a HelmChart", func(t *testing.T) { testChartRefToHelmChart(h.forTest(t)) })
	t.Run("chartRef to an ExternalArtifact", func(t *testing.T) { testChartRefToExternalArtifact(h.forTest(t)) })
	t.Run("a GitRepository commit upgrades at once", func(t *testing.T) { testGitChartFollowsCommits(h.forTest(t)) })
	t.Run("a new version in a HelmRepository upgrades the ranges it matches", func(t *testing.T) {
		testHelmRepositoryNewVersion(h.forTest(t))
	})
	t.Run("source-controller's new index artifact upgrades at once", func(t *testing.T) {
		testHelmRepositoryArtifactChange(h.forTest(t))
	})
}

// testChartRefToHelmChart: a HelmRelease whose chartRef is a source-controller
// HelmChart installs the chart source-controller packaged from the harness's
// HelmRepository, as helm-controller would.
func testChartRefToHelmChart(h *harness) {
	g := NewWithT(h.t)
	ctx := h.t.Context()
	g.Expect(h.c.Create(ctx, &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "small"},
		Spec: sourcev1.HelmChartSpec{
			Chart: "small", Version: "*", Interval: metav1.Duration{Duration: time.Hour},
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
		},
	})).To(Succeed())
	h.artifactOf(g, &sourcev1.HelmChart{}, "small")

	h.createNamespace("charted")
	h.createRelease("charted", "app", kraanv1.HelmReleaseSpec{
		ChartRef: &kraanv1.CrossNamespaceSourceReference{Kind: kraanv1.HelmChartKind, Name: "small", Namespace: fluxNamespace},
		Values:   &apiextensionsv1.JSON{Raw: []byte(`{"message": "from a HelmChart"}`)},
	})
	hr := h.releaseReady("charted", "app", func(g Gomega, hr *kraanv1.HelmRelease) {
		g.Expect(hr.Status.History[0].ChartName).To(Equal("small"))
	})
	g.Expect(hr.Status.LastAttemptedSourceRevision).To(Equal("0.1.0"), "a HelmChart's artifact revision")
	cm := &corev1.ConfigMap{}
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: "charted", Name: "app"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("message", "from a HelmChart"))
}

// testChartRefToExternalArtifact: a HelmRelease whose chartRef is an
// ExternalArtifact (Flux 2.7) installs the chart its artifact holds. Another
// controller publishes such artifacts; here the test plays it, publishing
// the packaged chart source-controller made for the HelmChart "small" (the
// subtest before) in the ExternalArtifact's status, as a producer would.
func testChartRefToExternalArtifact(h *harness) {
	g := NewWithT(h.t)
	ctx := h.t.Context()
	artifact := h.artifactOf(g, &sourcev1.HelmChart{}, "small")
	external := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "published-small"}}
	g.Expect(h.c.Create(ctx, external)).To(Succeed())
	external.Status = sourcev1.ExternalArtifactStatus{Artifact: artifact, Conditions: []metav1.Condition{{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "published", LastTransitionTime: metav1.Now()}}}
	g.Expect(h.c.Status().Update(ctx, external)).To(Succeed())

	h.createNamespace("external")
	h.createRelease("external", "app", kraanv1.HelmReleaseSpec{
		ChartRef: &kraanv1.CrossNamespaceSourceReference{Kind: kraanv1.ExternalArtifactKind, Name: "published-small", Namespace: fluxNamespace},
		Values:   &apiextensionsv1.JSON{Raw: []byte(`{"message": "from an ExternalArtifact"}`)},
	})
	hr := h.releaseReady("external", "app", func(g Gomega, hr *kraanv1.HelmRelease) {
		g.Expect(hr.Status.History[0].ChartName).To(Equal("small"))
	})
	g.Expect(hr.Status.LastAttemptedSourceRevision).To(Equal(artifact.Revision))
	cm := &corev1.ConfigMap{}
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: "external", Name: "app"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("message", "from an ExternalArtifact"))
}

// testGitChartFollowsCommits: a chart in a GitRepository is upgraded as soon
// as source-controller has the commit, through the watch on the source.
func testGitChartFollowsCommits(h *harness) {
	g := NewWithT(h.t)
	h.createGitSource("git-charts", "git-charts")
	files := chartFiles(h.t, "small", "charts/small/")
	h.commitTo("git-charts", "git-charts", files)

	h.createNamespace("git-charted")
	h.createRelease("git-charted", "app", kraanv1.HelmReleaseSpec{
		Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
			Chart:     "charts/small",
			SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "git-charts", Namespace: fluxNamespace},
		}},
	})
	h.releaseReady("git-charted", "app", nil)

	files["charts/small/values.yaml"] = strings.Replace(files["charts/small/values.yaml"],
		"message: hello from small", "message: from the next commit", 1)
	rev := h.commitTo("git-charts", "git-charts", files)
	committed := time.Now() // source-controller has the new artifact
	upgrading := h.waitRevision("git-charted", "app", 2)
	h.releaseReady("git-charted", "app", func(g Gomega, hr *kraanv1.HelmRelease) {
		g.Expect(hr.Status.LastAttemptedSourceRevision).To(Equal(rev))
	})
	h.t.Logf("GitRepository artifact %s: upgrade started after %s, Ready after %s (release interval: 1h)", rev,
		upgrading.Sub(committed).Round(time.Millisecond), time.Since(committed).Round(time.Millisecond))
	cm := &corev1.ConfigMap{}
	g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: "git-charted", Name: "app"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("message", "from the next commit"))
}

// testHelmRepositoryNewVersion: the operator asks a HelmRepository for its
// index once per spec.interval (2s here) and upgrades the releases whose range
// now resolves to the new version; a release pinned to the old version is not
// even reconciled.
func testHelmRepositoryNewVersion(h *harness) {
	g := NewWithT(h.t)
	repo := chartrepo.NewHTTPRepo(h.t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0")
	const ns = "repo-follow"
	h.createNamespace(ns)
	g.Expect(h.c.Create(h.t.Context(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "polled"},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: 2 * time.Second}},
	})).To(Succeed())
	for name, version := range map[string]string{"follows": "~0.1", "pinned": "0.1.0"} {
		h.createRelease(ns, name, kraanv1.HelmReleaseSpec{Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
			Chart: "small", Version: version, SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "polled"},
		}}})
	}
	before := h.releaseReady(ns, "follows", nil).Status.LastAttemptedSourceRevision
	g.Expect(before).To(HavePrefix("sha256:"), "the digest of the index the version was resolved from")
	pinned := h.releaseReady(ns, "pinned", nil)

	repo.Add(chartrepo.ChartDir("small"), "0.1.1")
	published := time.Now()
	upgrading := h.waitRevision(ns, "follows", 2)
	hr := h.releaseReady(ns, "follows", func(g Gomega, hr *kraanv1.HelmRelease) {
		g.Expect(hr.Status.History[0].ChartVersion).To(Equal("0.1.1"))
	})
	h.t.Logf("a new chart version: upgrade started after %s, Ready after %s (repository interval 2s, release interval 1h)",
		upgrading.Sub(published).Round(time.Millisecond), time.Since(published).Round(time.Millisecond))
	g.Expect(hr.Status.LastAttemptedSourceRevision).To(And(HavePrefix("sha256:"), Not(Equal(before))))

	// The pinned release is not reconciled: it would record the new index.
	g.Consistently(func(g Gomega) {
		now := h.release(g, ns, "pinned")
		g.Expect(now.Status.LastAttemptedSourceRevision).To(Equal(pinned.Status.LastAttemptedSourceRevision))
		g.Expect(now.Status.History).To(HaveLen(1))
		g.Expect(now.Status.History[0].Version).To(Equal(1))
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// testHelmRepositoryArtifactChange: a HelmRepository source-controller
// manages (interval 1h) is looked at as soon as its artifact changes.
func testHelmRepositoryArtifactChange(h *harness) {
	g := NewWithT(h.t)
	repo := chartrepo.NewHTTPRepo(h.t)
	repo.Add(chartrepo.ChartDir("small"), "0.1.0")
	g.Expect(h.c.Create(h.t.Context(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "managed"},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Hour}},
	})).To(Succeed())
	h.artifactOf(g, &sourcev1.HelmRepository{}, "managed")
	const ns = "repo-managed"
	h.createNamespace(ns)
	h.createRelease(ns, "app", kraanv1.HelmReleaseSpec{Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
		Chart: "small", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "managed", Namespace: fluxNamespace},
	}}})
	h.releaseReady(ns, "app", nil)

	repo.Add(chartrepo.ChartDir("small"), "0.2.0")
	old := h.artifactOf(g, &sourcev1.HelmRepository{}, "managed").Revision
	h.requestReconcile(&sourcev1.HelmRepository{}, "managed")
	g.Eventually(func(g Gomega) {
		g.Expect(h.artifactOf(g, &sourcev1.HelmRepository{}, "managed").Revision).NotTo(Equal(old))
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	indexed := time.Now()
	upgrading := h.waitRevision(ns, "app", 2)
	h.releaseReady(ns, "app", func(g Gomega, hr *kraanv1.HelmRelease) {
		g.Expect(hr.Status.History[0].ChartVersion).To(Equal("0.2.0"))
	})
	h.t.Logf("source-controller's new index artifact: upgrade started after %s, Ready after %s (intervals: 1h)",
		upgrading.Sub(indexed).Round(time.Millisecond), time.Since(indexed).Round(time.Millisecond))
}

// waitRevision waits until Helm's storage holds the given revision of the
// release (in any status: pending-upgrade is the upgrade starting) and
// returns when it was seen.
func (h *harness) waitRevision(namespace, release string, revision int) time.Time {
	name := fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, revision)
	NewWithT(h.t).Eventually(func(g Gomega) {
		g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{})).To(Succeed())
	}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
	return time.Now()
}

// chartFiles reads a test chart's files, keyed by prefix + their path.
func chartFiles(t *testing.T, name, prefix string) map[string]string {
	files := map[string]string{}
	dir := chartrepo.ChartDir(name)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[prefix+filepath.ToSlash(rel)] = string(data)
		return nil
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return files
}

func (h *harness) createNamespace(name string) {
	NewWithT(h.t).Expect(h.c.Create(h.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

// createRelease creates a HelmRelease with an interval of an hour: anything
// that happens sooner was triggered by a watch.
func (h *harness) createRelease(namespace, name string, spec kraanv1.HelmReleaseSpec) {
	spec.Interval = metav1.Duration{Duration: time.Hour}
	NewWithT(h.t).Expect(h.c.Create(h.t.Context(), &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec,
	})).To(Succeed())
}

func (h *harness) release(g Gomega, namespace, name string) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	g.Expect(h.c.Get(h.t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, hr)).To(Succeed())
	return hr
}

// releaseReady waits until the release is Ready at its generation and check
// holds (nil: nothing more), and returns it.
func (h *harness) releaseReady(namespace, name string, check func(Gomega, *kraanv1.HelmRelease)) *kraanv1.HelmRelease {
	var hr *kraanv1.HelmRelease
	NewWithT(h.t).Eventually(func(g Gomega) {
		hr = h.release(g, namespace, name)
		ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		if check != nil {
			check(g, hr)
		}
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	return hr
}
