package tenancy_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

const (
	timeout = 3 * time.Minute
	poll    = 200 * time.Millisecond
)

// startOperator runs the operator binary with args and leader election, and
// stops it when the test ends (printing its log's tail if the test failed).
func startOperator(t *testing.T, name string, args ...string) *suite.RunningOperator {
	t.Helper()
	op, err := suite.StartOperator(t.Context(), suite.OperatorProcess{
		Name: name, Binary: operatorBinary, Kubeconfig: kubeconfig, Dir: t.TempDir(),
		Args: append([]string{"--leader-elect", "--leader-election-namespace=" + leaseNamespace, "--log-level=debug"}, args...),
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(op.LogTail(60))
		}
	})
	return op
}

// newRepository serves the small test chart and points a HelmRepository
// named charts in namespace at it.
func newRepository(t *testing.T, namespace string) {
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	NewWithT(t).Expect(k8s.Create(t.Context(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "charts"},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: time.Hour}},
	})).To(Succeed())
}

// newRelease creates a release of the small chart from the HelmRepository
// charts of sourceNamespace, with labels.
func newRelease(t *testing.T, namespace, name, sourceNamespace string, labels map[string]string) {
	NewWithT(t).Expect(k8s.Create(t.Context(), &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: kraanv1.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart: "small", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts", Namespace: sourceNamespace},
			}},
		},
	})).To(Succeed())
}

func getRelease(g Gomega, namespace, name string) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, hr)).To(Succeed())
	return hr
}

// TestSharding: three operator processes, two shards and the default one
// (Flux's convention: the default process selects objects without the key),
// each reconcile exactly the releases of their shard; a release of a shard no
// process runs is left untouched, and every shard holds a Lease of its own.
func TestSharding(t *testing.T) {
	ns := suite.NewNamespace(t, k8s, "sharded")
	newRepository(t, ns)
	ops := map[string]*suite.RunningOperator{
		"a":       startOperator(t, "shard-a", "--watch-label-selector="+manifest.ShardLabel+"=a"),
		"b":       startOperator(t, "shard-b", "--watch-label-selector="+manifest.ShardLabel+"=b"),
		"default": startOperator(t, "shard-default", "--watch-label-selector=!"+manifest.ShardLabel),
	}
	releases := map[string]string{"rel-a1": "a", "rel-a2": "a", "rel-b1": "b", "rel-d1": "default"}
	for name, shard := range releases {
		var labels map[string]string
		if shard != "default" {
			labels = map[string]string{manifest.ShardLabel: shard}
		}
		newRelease(t, ns, name, "", labels)
	}
	newRelease(t, ns, "rel-c1", "", map[string]string{manifest.ShardLabel: "c"})

	g := NewWithT(t)
	for name := range releases {
		g.Eventually(func(g Gomega) {
			hr := getRelease(g, ns, name)
			ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), name)
	}

	// One actor per release: one Helm revision each, and only the owning
	// process's log mentions it.
	for name, shard := range releases {
		g.Expect(helmRevisions(g, ns, name)).To(Equal([]string{"1"}), name)
		for s, op := range ops {
			mentions := mentionsRelease(op.Log(), name)
			g.Expect(mentions).To(Equal(s == shard), "log of shard %s about %s", s, name)
		}
	}
	// The release of shard c, which no process runs, was never looked at.
	orphan := getRelease(g, ns, "rel-c1")
	g.Expect(orphan.Status.Conditions).To(BeEmpty())
	g.Expect(orphan.Finalizers).To(BeEmpty())
	g.Expect(helmRevisions(g, ns, "rel-c1")).To(BeEmpty())
	for s, op := range ops {
		g.Expect(mentionsRelease(op.Log(), "rel-c1")).To(BeFalse(), "shard %s", s)
	}

	// Each shard leads with a Lease of its own. Operators of other tests of
	// the package leave their released Leases (no holder) behind.
	leases := &coordinationv1.LeaseList{}
	g.Expect(k8s.List(t.Context(), leases, client.InNamespace(leaseNamespace))).To(Succeed())
	holders := map[string]string{}
	for _, l := range leases.Items {
		if strings.HasSuffix(l.Name, suite.LeaseName) && ptr.Deref(l.Spec.HolderIdentity, "") != "" {
			holders[l.Name] = *l.Spec.HolderIdentity
		}
	}
	g.Expect(holders).To(HaveLen(3), "one Lease per shard: %v", holders)
}

// TestNoCrossNamespaceRefs: with --no-cross-namespace-refs a release whose
// chart source is in another namespace stalls with a message naming the field,
// and nothing is installed; the same release with a source of its own
// namespace installs.
func TestNoCrossNamespaceRefs(t *testing.T) {
	startOperator(t, "locked-down", "--no-cross-namespace-refs", "--watch-label-selector=tenancy=locked")
	shared := suite.NewNamespace(t, k8s, "shared")
	tenant := suite.NewNamespace(t, k8s, "tenant")
	newRepository(t, shared)
	newRepository(t, tenant)
	labels := map[string]string{"tenancy": "locked"}
	newRelease(t, tenant, "borrowed", shared, labels)
	newRelease(t, tenant, "own", "", labels)

	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		hr := getRelease(g, tenant, "borrowed")
		stalled := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(kraanv1.ReasonAccessDenied))
		g.Expect(stalled.Message).To(And(ContainSubstring("spec.chart.spec.sourceRef.namespace"), ContainSubstring(shared),
			ContainSubstring("--no-cross-namespace-refs")))
		ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getRelease(g, tenant, "own").Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Expect(helmRevisions(g, tenant, "borrowed")).To(BeEmpty())
}

// helmRevisions lists the revisions Helm storage holds for a release.
func helmRevisions(g Gomega, namespace, release string) []string {
	revisions, err := suite.HelmRevisions(context.Background(), k8s, namespace, release)
	g.Expect(err).NotTo(HaveOccurred())
	return revisions
}

// mentionsRelease reports whether an operator's log has a line about the
// HelmRelease name (its reconciles log it as the object's name).
func mentionsRelease(log, name string) bool {
	return regexp.MustCompile(`"name":\s*"` + regexp.QuoteMeta(name) + `"`).MatchString(log)
}
