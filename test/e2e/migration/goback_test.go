package migration_test

import (
	"context"
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// kraanStorageLabels are the labels kraan-operator writes on revisions in
// Helm storage. Helm copies a revision's labels into the next one, so they
// are removed before going back: on Flux's revisions they would claim a
// chart and post-renderers kraan-operator never checked.
var kraanStorageLabels = []string{helm.ChartDigestLabel, helm.ValuesDigestLabel, helm.PostRenderersDigestLabel, helm.InterruptedLabel}

// goBack is the way back to Flux of docs/migrating-from-flux.md, run from
// the page's blocks: start helm-controller, then for each release suspend
// and delete the kraan.io HelmRelease (kraan-operator lets a suspended one go
// without uninstalling), remove kraan-operator's labels from Helm storage
// and apply the saved spec as a Flux HelmRelease. helm-controller upgrades
// each release once, as it does a release its new HelmRelease has no
// history of; the Deployments, their pod templates and pods stay.
func (m *migration) goBack(t *testing.T, doc *guideRun) {
	t.Helper()
	start := time.Now()
	adopted := snapshot(t, m.flux, m.namespace, m.target)
	g := NewWithT(t)
	startHelmController(t)
	for _, f := range m.flux {
		doc.sh.Set("NS", m.namespace, "NAME", f.name, "RELEASE", f.release.name, "STORAGE_NS", f.release.storageNamespace)
		doc.run(t, "Going back to Flux", 1, 2, 3, 4)
		// The kraan.io HelmRelease let go without touching the release.
		g.Expect(apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKey{Namespace: m.namespace, Name: f.name},
			&kraanv1.HelmRelease{}))).To(BeTrue(), "kraan.io HelmRelease %s", f.name)
		for _, l := range kraanStorageLabels {
			g.Expect(storedLabels(g, f.release)).NotTo(HaveKey(l), "revisions of %s", f.release)
		}
	}
	waitFluxReady(t, m.objs)
	back := snapshot(t, m.flux, m.namespace, m.target)

	upgraded := 0
	for _, f := range m.flux {
		was, now := adopted.storage[f.name], back.storage[f.name]
		if now.latest() == was.latest()+1 && now.status[now.latest()] == "deployed" && !now.adopted(now.latest()) {
			upgraded++
		}
		// Every revision there was is still there, in the same Secret:
		// nothing was uninstalled.
		for version, uid := range was.uids {
			g.Expect(now.uids).To(HaveKeyWithValue(version, uid), "revision %d of %s", version, f.release)
		}
	}
	restarted := restartedPods(adopted.workloads, back.workloads)
	t.Logf("Back to Flux in %v: releases upgraded once by helm-controller: %d of %d; pods restarted: %d of %d",
		time.Since(start).Round(time.Second), upgraded, len(m.flux), restarted, podCount(adopted.workloads))
	g.Expect(upgraded).To(Equal(len(m.flux)), "releases helm-controller took back with one upgrade")
	for name, w := range adopted.workloads {
		g.Expect(back.workloads).To(HaveKey(name))
		g.Expect(back.workloads[name].uid).To(Equal(w.uid), "Deployment %s was re-created", name)
		g.Expect(back.workloads[name].templateHash).To(Equal(w.templateHash), "the pod template of %s changed", name)
	}
	g.Expect(restarted).To(BeZero(), "pods restarted")
}

// storedLabels returns the labels on any of the release's storage Secrets.
func storedLabels(g Gomega, release helmRelease) map[string]string {
	secrets := &corev1.SecretList{}
	g.Expect(k8s.List(context.Background(), secrets, client.InNamespace(release.storageNamespace),
		client.MatchingLabels{"owner": "helm", "name": release.name})).To(Succeed())
	out := map[string]string{}
	for _, s := range secrets.Items {
		maps.Copy(out, s.Labels)
	}
	return out
}
