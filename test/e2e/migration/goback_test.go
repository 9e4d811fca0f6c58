package migration_test

import (
	"context"
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

// goBack is the way back to Flux of docs/migrating-from-flux.md: suspend and
// delete the kraan.io HelmReleases (kraan-operator lets a suspended one go
// without uninstalling), remove kraan-operator's labels from Helm storage,
// start helm-controller and apply the Flux YAML again. helm-controller
// upgrades each release once, as it does a release its new HelmRelease has
// no history of; the Deployments, their pod templates and pods stay.
func (m *migration) goBack(t *testing.T) {
	t.Helper()
	start := time.Now()
	adopted := snapshot(t, m.flux, m.namespace, m.target)
	g := NewWithT(t)
	ctx := context.Background()
	for _, o := range m.objs {
		g.Eventually(func(g Gomega) {
			hr := &kraanv1.HelmRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), hr)).To(Succeed())
			hr.Spec.Suspend = true
			g.Expect(k8s.Update(ctx, hr)).To(Succeed())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		hr := &kraanv1.HelmRelease{}
		hr.Namespace, hr.Name = o.GetNamespace(), o.GetName()
		g.Expect(k8s.Delete(ctx, hr)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, o := range m.objs {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(o), &kraanv1.HelmRelease{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kraan.io HelmRelease %s still exists: %v", o.GetName(), err)
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	for _, f := range m.flux {
		removeKraanLabels(t, f.release)
	}
	expectStorage(t, m.flux, adopted.storage)

	startHelmController(t)
	for _, o := range m.objs {
		g.Expect(k8s.Create(ctx, o.DeepCopy())).To(Succeed(), "Flux HelmRelease %s", o.GetName())
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

// removeKraanLabels is `kubectl label secret -n <storageNamespace> -l
// owner=helm,name=<release> kraan.io/chart-digest- …`.
func removeKraanLabels(t *testing.T, release helmRelease) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		secrets := &corev1.SecretList{}
		g.Expect(k8s.List(context.Background(), secrets, client.InNamespace(release.storageNamespace),
			client.MatchingLabels{"owner": "helm", "name": release.name})).To(Succeed())
		for i := range secrets.Items {
			s := &secrets.Items[i]
			for _, l := range kraanStorageLabels {
				delete(s.Labels, l)
			}
			g.Expect(k8s.Update(context.Background(), s)).To(Succeed())
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
