package helmrelease

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// cachedRecords finds a release's records through the index of the
// operator's Secret metadata cache: among other releases' records and
// unrelated Secrets of the same namespace, the newest of its own.
func TestCachedRecords_FindsTheReleasesRecordsThroughTheIndex(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	mgr := testenv.NewManager(t, env.Config)
	ctx := context.Background()
	g.Expect(indexHelmRecords(ctx, mgr.GetFieldIndexer())).To(Succeed())
	testenv.RunManager(t, mgr)
	ns := "records"
	testenv.CreateNamespace(t, env.Client, ns)
	record := func(release string, version int, status string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, version),
			Labels: map[string]string{"owner": "helm", "name": release, "version": fmt.Sprint(version), "status": status}}}
	}
	for _, s := range []*corev1.Secret{record("app", 1, "superseded"), record("app", 2, "deployed"), record("other", 3, "deployed"),
		record("app-two", 1, "deployed"), {ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{"name": "app"}}}} {
		g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	}
	r := &Reconciler{Client: mgr.GetClient()}
	g.Eventually(func(g Gomega) {
		latest, version, ok := r.cachedRecords(ctx, helm.Target{StorageNamespace: ns, ReleaseName: "app"})
		g.Expect(ok).To(BeTrue(), "the cache could not say")
		g.Expect(version).To(Equal(2))
		g.Expect(latest).To(HaveKeyWithValue("status", "deployed"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	latest, version, ok := r.cachedRecords(ctx, helm.Target{StorageNamespace: ns, ReleaseName: "none"})
	g.Expect(ok).To(BeTrue())
	g.Expect(latest).To(BeNil())
	g.Expect(version).To(Equal(-1))
}
