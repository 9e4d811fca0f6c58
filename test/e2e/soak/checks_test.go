package soak_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// helmHistory returns every revision Helm storage holds for the release,
// oldest first, with the labels of its Secret (kraan.io/interrupted among
// them); none when the release does not exist.
func helmHistory(g Gomega, r *release) []*helmrelease.Release {
	cs, err := kubernetes.NewForConfig(restConfig)
	g.Expect(err).NotTo(HaveOccurred())
	stored, err := driver.NewSecrets(cs.CoreV1().Secrets(r.namespace)).Query(map[string]string{"owner": "helm", "name": r.name})
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred(), "reading Helm storage of %s", r)
	revs := make([]*helmrelease.Release, 0, len(stored))
	for _, s := range stored {
		revs = append(revs, s.(*helmrelease.Release))
	}
	slices.SortFunc(revs, func(a, b *helmrelease.Release) int { return a.Version - b.Version })
	return revs
}

// stateOf is the desired state a revision was made from, in the release's
// terms: the Habitat's chart is not the workload's to choose.
func stateOf(r *release, rev *helmrelease.Release) state {
	s := state{values: normalise(rev.Config)}
	if r.kind == kindHelmRelease && rev.Chart != nil && rev.Chart.Metadata != nil {
		s.chart = rev.Chart.Metadata.Version
	}
	return s
}

// converged checks, once, that the whole workload is in its final state:
// every layer Deployed at the last version and Git revision; every
// HelmRelease and the Habitat Ready at their generation, with the newest
// Helm revision deployed from their final desired state; every deleted
// release gone, its Helm storage and Deployment included.
func (w *workload) converged(g Gomega) {
	for l := range w.size.layers {
		al := &kraanv1.AddonsLayer{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: layerName(l)}, al)).To(Succeed())
		g.Expect(al.Status.State).To(Equal(kraanv1.DeployedState), "layer %s: %+v", al.Name, apimeta.FindStatusCondition(al.Status.Conditions, kraanv1.ReadyCondition))
		g.Expect(al.Status.Version).To(Equal(w.version()), "layer %s", al.Name)
		g.Expect(al.Status.Revision).To(Equal(w.revision), "layer %s", al.Name)
		g.Expect(al.Status.ObservedGeneration).To(Equal(al.Generation), "layer %s", al.Name)
	}
	for _, r := range w.releases {
		if r.deleted {
			expectGone(g, r)
			continue
		}
		expectReady(g, r)
		revs := helmHistory(g, r)
		g.Expect(revs).NotTo(BeEmpty(), "%s has no Helm release", r)
		newest := revs[len(revs)-1]
		g.Expect(newest.Info.Status).To(Equal(rcommon.StatusDeployed), "%s revision %d", r, newest.Version)
		g.Expect(stateOf(r, newest).equal(r.want())).To(BeTrue(), "%s revision %d is %s, want %s", r, newest.Version, stateOf(r, newest), r.want())
		if r.kind == kindHelmRelease { // what the chart rendered from the values is applied
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: r.namespace, Name: r.name}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("message", r.message), "%s", r)
		}
	}
}

// expectReady checks the release's object is Ready for its current
// generation.
func expectReady(g Gomega, r *release) {
	var obj client.Object
	var conditions *[]metav1.Condition
	var observed *int64
	switch r.kind {
	case kindHelmRelease:
		hr := &kraanv1.HelmRelease{}
		obj, conditions, observed = hr, &hr.Status.Conditions, &hr.Status.ObservedGeneration
	default:
		hab := &habitatv1.Habitat{}
		obj, conditions, observed = hab, &hab.Status.Conditions, &hab.Status.ObservedGeneration
	}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: r.namespace, Name: r.name}, obj)).To(Succeed())
	ready := apimeta.FindStatusCondition(*conditions, kraanv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil(), "%s has no Ready condition", r)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", r, ready.Message)
	g.Expect(*observed).To(Equal(obj.GetGeneration()), "%s", r)
	g.Expect(ready.ObservedGeneration).To(Equal(obj.GetGeneration()), "%s", r)
}

// expectGone checks a deleted release left nothing: its object, its Helm
// storage and the chart's Deployment.
func expectGone(g Gomega, r *release) {
	key := client.ObjectKey{Namespace: r.namespace, Name: r.name}
	g.Expect(apierrors.IsNotFound(k8s.Get(context.Background(), key, &kraanv1.HelmRelease{}))).To(BeTrue(), "%s was not deleted", r)
	g.Expect(helmHistory(g, r)).To(BeEmpty(), "%s was not uninstalled", r)
	g.Expect(apierrors.IsNotFound(k8s.Get(context.Background(), key, &appsv1.Deployment{}))).To(BeTrue(), "the Deployment of %s is left", r)
}

// audit is the revision accounting of one release.
type audit struct {
	release     *release
	revisions   int // the newest revision's number: Helm numbers them 1, 2, … with no gaps
	interrupted int // revisions an unlock found pending and marked failed
	problems    []string
}

// auditRevisions accounts for every revision of a live release.
//
// D_0 … D_m are the desired states the workload gave the release, D_0 the
// one it was created with, so m is the number of spec changes (chart version
// or values; a layer version bump is one for the releases annotated
// kraan.updateVersion and none for the others). Helm numbers revisions
// 1 … n. History is complete: the HelmReleases keep every revision
// (maxHistory 0) and the Habitat changes fewer times than the 10 its
// controller keeps, which the revision numbers starting at 1 confirm.
//
// The documented crash recovery (docs/helmreleases.md, "Release state
// machine"): an install or upgrade that a kill interrupts leaves its
// revision pending-*; the next operator unlocks it (marks it failed and
// labels it kraan.io/interrupted) and retries the same action, which makes
// one more revision of the same desired state, with no rollback or
// uninstall before it. So, for each release:
//
//  1. no revision is pending-*: nothing is left locked;
//  2. no revision failed other than by that interruption: Helm itself
//     failing (a wait that timed out, a request refused) is not a crash
//     recovery, and it would lead to a rollback;
//  3. no revision is a rollback, and every revision is made from one of
//     D_0 … D_m: the operator never deploys a state the workload did not
//     ask for;
//  4. revision k > 1 is made from another state than revision k−1 unless
//     revision k−1 was interrupted: an upgrade to what is already deployed
//     is a duplicate;
//  5. n ≤ m + 1 + i, where i is the number of interrupted revisions: one
//     revision per desired state and one retry per interruption at most.
//     Fewer is right when changes made while an earlier one was still
//     rolling out are applied together in one upgrade.
//
// The newest revision being deployed from D_m is checked by converged.
func auditRevisions(r *release, revs []*helmrelease.Release) audit {
	a := audit{release: r}
	if len(revs) == 0 {
		a.problems = append(a.problems, "no revision")
		return a
	}
	a.revisions = revs[len(revs)-1].Version
	if revs[0].Version != 1 || len(revs) != a.revisions {
		a.problems = append(a.problems, fmt.Sprintf("Helm storage holds %d revisions numbered %d to %d: history was pruned or lost",
			len(revs), revs[0].Version, a.revisions))
	}
	for k, rev := range revs {
		interrupted := rev.Labels[helm.InterruptedLabel] != ""
		if interrupted {
			a.interrupted++
		}
		s := stateOf(r, rev)
		switch {
		case rev.Info.Status.IsPending():
			a.problems = append(a.problems, fmt.Sprintf("revision %d is %s", rev.Version, rev.Info.Status))
		case rev.Info.Status == rcommon.StatusFailed && !interrupted:
			a.problems = append(a.problems, fmt.Sprintf("revision %d failed: %s", rev.Version, rev.Info.Description))
		}
		if strings.HasPrefix(rev.Info.Description, "Rollback") {
			a.problems = append(a.problems, fmt.Sprintf("revision %d is a rollback: %s", rev.Version, rev.Info.Description))
		}
		if !slices.ContainsFunc(r.history, s.equal) {
			a.problems = append(a.problems, fmt.Sprintf("revision %d is %s, which the workload never asked for", rev.Version, s))
		}
		if k > 0 && s.equal(stateOf(r, revs[k-1])) && revs[k-1].Labels[helm.InterruptedLabel] == "" {
			a.problems = append(a.problems, fmt.Sprintf("revision %d repeats revision %d (%s, %s), which was not interrupted",
				rev.Version, revs[k-1].Version, s, revs[k-1].Info.Status))
		}
	}
	if limit := r.changes() + 1 + a.interrupted; a.revisions > limit {
		a.problems = append(a.problems, fmt.Sprintf("%d revisions for %d spec changes and %d interruptions: at most %d expected",
			a.revisions, r.changes(), a.interrupted, limit))
	}
	return a
}
