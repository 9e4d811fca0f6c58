package helmreleases_test

import (
	"context"
	"testing"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// teamBCredentials guard team B's private repositories.
var teamBCredentials = map[string][]byte{"username": []byte("team-b"), "password": []byte("team-b-s3cret")}

// TestHelmRelease_PrivateChartIsNeverServedToAnotherTenant: team B installs
// a chart from a password-protected repository; team A, in its own
// namespace, points a HelmRepository at a source that names the same chart
// (the digest is in team B's status) but cannot serve it. Team A's release
// fails on its own fetch, and nothing is installed in team A's namespace;
// team B's release stays Ready.
func TestHelmRelease_PrivateChartIsNeverServedToAnotherTenant(t *testing.T) {
	cases := []struct {
		name string
		// serve starts team B's private source and team A's borrowing one,
		// and returns the HelmRepository specs of both.
		serve func(t *testing.T) (teamB, teamA sourcev1.HelmRepositorySpec)
		// failure is in team A's Ready message: its own fetch failed.
		failure string
	}{
		{name: "HTTP repository: an index naming the digest at a URL that does not exist", failure: "404 Not Found",
			serve: func(t *testing.T) (sourcev1.HelmRepositorySpec, sourcev1.HelmRepositorySpec) {
				private := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
				private.RequireBasicAuth(string(teamBCredentials["username"]), string(teamBCredentials["password"]))
				nowhere := chartrepo.NewHTTPRepo(t)
				borrowing := chartrepo.NewHTTPRepo(t)
				borrowing.ServeIndexWithURLs(private, nowhere.URL+"/charts")
				return sourcev1.HelmRepositorySpec{URL: private.URL}, sourcev1.HelmRepositorySpec{URL: borrowing.URL}
			}},
		{name: "OCI registry: a tag resolving to the private manifest's digest", failure: "404 Not Found",
			serve: func(t *testing.T) (sourcev1.HelmRepositorySpec, sourcev1.HelmRepositorySpec) {
				private := chartrepo.NewOCIRegistry(t)
				private.RequireBasicAuth(string(teamBCredentials["username"]), string(teamBCredentials["password"]))
				pushed := private.Push(chartrepo.ChartDir("small"), "0.1.0")
				hostile := chartrepo.NewHostileRegistry(t)
				hostile.ClaimManifest("small", "0.1.0", pushed[0])
				return ociSpec(private.URL()), ociSpec(hostile.URL())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			teamB, teamA := newNamespace(t), newNamespace(t)
			specB, specA := tc.serve(t)
			createRepository(t, teamB, specB, teamBCredentials)
			newRelease(t, teamB, "private", "small", withVersion("0.1.0"))
			readyAt(t, teamB, "private")

			createRepository(t, teamA, specA, nil)
			newRelease(t, teamA, "borrowed", "small", withVersion("0.1.0"))

			g := NewWithT(t)
			g.Eventually(func(g Gomega) {
				hr := get(g, teamA, "borrowed")
				g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
				ready := condition(hr, kraanv1.ReadyCondition)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Message).To(And(ContainSubstring("HelmRepository "+teamA+"/charts: "),
					ContainSubstring(tc.failure)), ready.Message)
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			g.Expect(helmRevisions(g, teamA, "borrowed")).To(BeEmpty())
			expectNothingInstalled(g, teamA)
			g.Expect(helmRevisions(g, teamB, "private")).To(ConsistOf("1=deployed"))
		})
	}
}

// TestHelmRelease_HostileRegistryIsRefusedByTheOperatorsCaps: a registry
// declaring a huge chart layer or manifest, lying about a layer's size, or
// paging its tag list without end fails the release with a condition naming
// the cap and its flag, and the bytes the registry actually sent stay under
// the cap: the operator never holds what it refused.
func TestHelmRelease_HostileRegistryIsRefusedByTheOperatorsCaps(t *testing.T) {
	hostile := chartrepo.NewHostileRegistry(t)
	hostile.DeclareLayer("huge-layer", "1.0.0", 2<<30)
	hostile.DeclareLayer("lying-layer", "1.0.0", 1024)
	hostile.DeclareHugeManifest("huge-manifest", "1.0.0", 2<<30)
	hostile.ServeEndlessTags("endless-tags", 1000)
	hostile.ServeEndlessTags("endless-pages", 0)
	ref := func(name string) string { return "oci://" + hostile.Host + "/charts/" + name }
	cases := []struct {
		chart, message string
		// maxSent bounds the bytes the registry sent for the chart.
		maxSent int64
	}{
		{chart: "huge-layer", maxSent: 10 << 20,
			message: "chart layer of " + ref("huge-layer") + ":1.0.0 declares 2 GiB, over the 10 MiB limit (--max-chart-size)"},
		// Reading stops after the declared KiB; at most what is in flight
		// in the sockets' buffers was sent.
		{chart: "lying-layer", maxSent: 32 << 20,
			message: "chart layer of " + ref("lying-layer") + ":1.0.0: the registry sent more, not the 1 KiB its descriptor declares"},
		{chart: "huge-manifest", maxSent: 2 << 20,
			message: "manifest of " + ref("huge-manifest") + ":1.0.0 declares 2 GiB, over the 2 MiB limit (--max-oci-manifest-size)"},
		{chart: "endless-tags", maxSent: 2 << 20,
			message: "tag list of " + ref("endless-tags") + " has more than 10000 tags, the limit (--max-oci-tags)"},
		{chart: "endless-pages", maxSent: 2 << 20,
			message: "tag list of " + ref("endless-pages") + " has more than 100 pages, the limit (--max-oci-tag-pages)"},
	}
	for _, tc := range cases {
		t.Run(tc.chart, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			createRepository(t, ns, ociSpec(hostile.URL()), nil)
			newRelease(t, ns, "hostile", tc.chart)

			g := NewWithT(t)
			g.Eventually(func(g Gomega) {
				hr := get(g, ns, "hostile")
				stalled := condition(hr, kraanv1.StalledCondition)
				g.Expect(stalled).NotTo(BeNil(), "a cap is the user's to raise, not a retry's")
				g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
				ready := condition(hr, kraanv1.ReadyCondition)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Message).To(And(ContainSubstring("HelmRepository "+ns+"/charts: "),
					ContainSubstring(tc.message)), ready.Message)
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			// An endless body ends when the client hangs up; then the count
			// is final.
			g.Eventually(hostile.InFlight).WithTimeout(time.Minute).Should(BeZero())
			t.Logf("the registry sent %d bytes for %s (bound %d)", hostile.Sent(tc.chart), tc.chart, tc.maxSent)
			g.Expect(hostile.Sent(tc.chart)).To(BeNumerically("<", tc.maxSent))
			g.Expect(helmRevisions(g, ns, "hostile")).To(BeEmpty())
		})
	}
}

// ociSpec is a HelmRepository of type oci on a plain-HTTP registry.
func ociSpec(url string) sourcev1.HelmRepositorySpec {
	return sourcev1.HelmRepositorySpec{URL: url, Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true}
}

// createRepository creates the HelmRepository "charts" of namespace with
// spec, and a secretRef holding credentials when they are given.
func createRepository(t *testing.T, namespace string, spec sourcev1.HelmRepositorySpec, credentials map[string][]byte) {
	t.Helper()
	g := NewWithT(t)
	repo := newHelmRepository(namespace, "charts", spec.URL)
	repo.Spec.Type, repo.Spec.Insecure = spec.Type, spec.Insecure
	if credentials != nil {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "repo-auth"}, Data: credentials}
		g.Expect(k8s.Create(context.Background(), secret)).To(Succeed())
		repo.Spec.SecretRef = &fluxmeta.LocalObjectReference{Name: secret.Name}
	}
	g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
}

// expectNothingInstalled checks a namespace holds none of the objects the
// small chart renders: no Deployment, no Service, no ConfigMap but the one
// Kubernetes puts in every namespace.
func expectNothingInstalled(g Gomega, namespace string) {
	ctx := context.Background()
	deployments := &appsv1.DeploymentList{}
	g.Expect(k8s.List(ctx, deployments, client.InNamespace(namespace))).To(Succeed())
	g.Expect(deployments.Items).To(BeEmpty())
	services := &corev1.ServiceList{}
	g.Expect(k8s.List(ctx, services, client.InNamespace(namespace))).To(Succeed())
	g.Expect(services.Items).To(BeEmpty())
	configMaps := &corev1.ConfigMapList{}
	g.Expect(k8s.List(ctx, configMaps, client.InNamespace(namespace))).To(Succeed())
	for _, cm := range configMaps.Items {
		g.Expect(cm.Name).To(Equal("kube-root-ca.crt"))
	}
}
