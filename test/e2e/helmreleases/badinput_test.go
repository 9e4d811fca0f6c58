package helmreleases_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestHelmRelease_BadInputKeepsTheDeployedRelease breaks a deployed release's
// spec in the ways users do; each gives a message they can act on, and the
// deployed revision stays untouched.
func TestHelmRelease_BadInputKeepsTheDeployedRelease(t *testing.T) {
	cases := []struct {
		name   string
		spoil  func(t *testing.T, ns string, hr *kraanv1.HelmRelease)
		reason string
		want   []string
		// absent must not be in the message: what a Secret holds.
		absent []string
	}{
		{"chart not found", func(_ *testing.T, _ string, hr *kraanv1.HelmRelease) { hr.Spec.Chart.Spec.Chart = "nope" },
			kraanv1.ReasonArtifactFailed, []string{"chart nope not found", "index.yaml"}, nil},
		{"version unsatisfiable", func(_ *testing.T, _ string, hr *kraanv1.HelmRelease) { hr.Spec.Chart.Spec.Version = ">=9.0.0" },
			kraanv1.ReasonArtifactFailed, []string{"no version of small matches >=9.0.0", "0.2.0", "0.1.0"}, nil},
		{"values against the chart's schema", func(_ *testing.T, _ string, hr *kraanv1.HelmRelease) {
			hr.Spec.Values = toJSON(map[string]any{"replicaCount": "many"})
		}, kraanv1.ReasonValuesError, []string{"replicaCount", "schema"}, nil},
		{"invalid values YAML in a ConfigMap", func(t *testing.T, ns string, hr *kraanv1.HelmRelease) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: ns},
				Data: map[string]string{"values.yaml": "message: [unclosed"}}
			NewWithT(t).Expect(k8s.Create(context.Background(), cm)).To(Succeed())
			hr.Spec.ValuesFrom = []kraanv1.ValuesReference{{Kind: "ConfigMap", Name: "broken"}}
		}, kraanv1.ReasonValuesError, []string{"ConfigMap broken", "values.yaml", "invalid YAML"}, nil},
		{"unreachable repository", func(t *testing.T, ns string, hr *kraanv1.HelmRelease) {
			hr.Spec.Chart.Spec.SourceRef.Name = "gone"
			NewWithT(t).Expect(k8s.Create(context.Background(), unreachableRepository(ns))).To(Succeed())
		}, kraanv1.ReasonArtifactFailed, []string{"127.0.0.1:1"}, nil},
		{"index that is not YAML", func(t *testing.T, ns string, hr *kraanv1.HelmRelease) {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("<html>not an index</html>"))
			}))
			t.Cleanup(server.Close)
			useRepository(t, hr, newHelmRepository(ns, "garbled", server.URL))
		}, kraanv1.ReasonArtifactFailed, []string{"HelmRepository", "/garbled", "invalid repository index", "/index.yaml"}, nil},
		{"chart whose digest is not the index's", func(t *testing.T, ns string, hr *kraanv1.HelmRelease) {
			repo := chartrepo.NewHTTPRepo(t)
			repo.Add(chartrepo.ChartDir("small"), "0.3.0")
			repo.Tamper("small", "0.3.0")
			useRepository(t, hr, newHelmRepository(ns, "tampered", repo.URL))
			hr.Spec.Chart.Spec.Version = "0.3.0"
		}, kraanv1.ReasonArtifactFailed, []string{"HelmRepository", "/tampered", "small-0.3.0.tgz has digest", "but the repository index says"}, nil},
		{"OCI tag that does not exist", func(t *testing.T, ns string, hr *kraanv1.HelmRelease) {
			registry := chartrepo.NewOCIRegistry(t)
			registry.Push(chartrepo.ChartDir("small"), "0.1.0")
			repo := newHelmRepository(ns, "oci", registry.URL())
			repo.Spec.Type, repo.Spec.Insecure = sourcev1.HelmRepositoryTypeOCI, true
			useRepository(t, hr, repo)
			hr.Spec.Chart.Spec.Version = "0.9.0"
		}, kraanv1.ReasonArtifactFailed, []string{"HelmRepository", "/oci", "no version of small matches 0.9.0", "available: 0.1.0"}, nil},
		{"certSecretRef with a malformed PEM", func(t *testing.T, ns string, hr *kraanv1.HelmRelease) {
			NewWithT(t).Expect(client.IgnoreAlreadyExists(k8s.Create(context.Background(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "broken-tls", Namespace: ns},
				Data:       map[string][]byte{"ca.crt": []byte(malformedPEM)},
			}))).To(Succeed())
			repo := newHelmRepository(ns, "private", "https://127.0.0.1:1/charts")
			repo.Spec.CertSecretRef = &fluxmeta.LocalObjectReference{Name: "broken-tls"}
			useRepository(t, hr, repo)
		}, kraanv1.ReasonArtifactFailed, []string{"HelmRepository", "certSecretRef", "/broken-tls", `"ca.crt"`, "not a valid X.509 certificate"},
			[]string{"Y2FuYXJ5", "canary"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			newRepository(t, ns)
			newRelease(t, ns, "app", "small", withVersion("0.1.0"))
			readyAt(t, ns, "app")
			uid := deployment(g, ns, "app").UID

			update(t, ns, "app", func(hr *kraanv1.HelmRelease) { tc.spoil(t, ns, hr) })
			g.Eventually(func(g Gomega) {
				ready := condition(get(g, ns, "app"), kraanv1.ReadyCondition)
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Reason).To(Equal(tc.reason), ready.Message)
				g.Expect(containsAll(ready.Message, tc.want...)).To(BeTrue(), ready.Message)
				for _, a := range tc.absent {
					g.Expect(ready.Message).NotTo(ContainSubstring(a))
				}
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			g.Expect(helmRevisions(g, ns, "app")).To(ConsistOf("1=deployed"))
			g.Expect(deployment(g, ns, "app").UID).To(Equal(uid))
		})
	}
}

// malformedPEM is a PEM block that holds no certificate; its content
// ("canary…" in base64) must never reach a condition.
const malformedPEM = "-----BEGIN CERTIFICATE-----\nY2FuYXJ5LXBlbS1jb250ZW50\n-----END CERTIFICATE-----\n"

// useRepository creates repo and points the release at it. The spoil of a
// case runs again when its update conflicts with the operator's: a
// repository created by the first run is kept.
func useRepository(t *testing.T, hr *kraanv1.HelmRelease, repo *sourcev1.HelmRepository) {
	t.Helper()
	NewWithT(t).Expect(client.IgnoreAlreadyExists(k8s.Create(context.Background(), repo))).To(Succeed())
	hr.Spec.Chart.Spec.SourceRef.Name = repo.Name
}

func unreachableRepository(ns string) *sourcev1.HelmRepository {
	return newHelmRepository(ns, "gone", "http://127.0.0.1:1/charts")
}

// TestHelmRelease_UnlocksAReleaseLeftPending: an operator killed mid-upgrade
// leaves the newest revision pending-upgrade in Helm storage, which makes
// every later Helm operation fail with "another operation is in progress".
// When the desired state has moved on meanwhile, there is no wait to resume:
// the engine unlocks the revision (marks it failed, labelled as interrupted)
// and, since nothing failed, upgrades directly instead of rolling back. (A
// pending revision of the desired state is resumed instead: test/e2e/crash.)
func TestHelmRelease_UnlocksAReleaseLeftPending(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "locked", "small", withValues(map[string]any{"message": "one"}))
	readyAt(t, ns, "locked")
	update(t, ns, "locked", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(map[string]any{"message": "two"}) })
	g.Eventually(func(g Gomega) {
		g.Expect(helmRevisions(g, ns, "locked")).To(ContainElement("2=deployed"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	readyAt(t, ns, "locked")

	markPending(t, ns, "locked")
	update(t, ns, "locked", func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(map[string]any{"message": "three"}) })
	g.Eventually(func(g Gomega) {
		hr := get(g, ns, "locked")
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(condition(hr, kraanv1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		// Helm's upgrade supersedes the newest revision when none is deployed.
		g.Expect(helmRevisions(g, ns, "locked")).To(Equal([]string{"1=superseded", "2=superseded", "3=deployed"}))
		g.Expect(configMapData(g, ns, "locked")).To(HaveKeyWithValue("message", "three"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(eventReasons(g, ns, "locked")).To(ContainElement(kraanv1.ReasonUnlocked), "the pending revision was not unlocked")
}

// markPending puts the newest revision of a release back to pending-upgrade,
// as an operation interrupted by SIGKILL leaves it.
func markPending(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	helmCfg := &action.Configuration{}
	g.Expect(helmCfg.Init(flags, ns, "secret")).To(Succeed())
	last, err := helmCfg.Releases.Last(name)
	g.Expect(err).NotTo(HaveOccurred())
	rel := last.(*release.Release)
	rel.SetStatus(rcommon.StatusPendingUpgrade, "Upgrade in progress")
	// As the operator would have written it: a record it did not sign is
	// never replayed.
	g.Expect(helm.SignRecord(testenv.RecordKey, ns, types.UID(rel.Labels[helm.RecordOwnerLabel]), rel)).To(Succeed())
	g.Expect(helmCfg.Releases.Update(rel)).To(Succeed())
}
