package helmreleases_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestHelmRelease_DriftIsWarnedThenCorrected edits a rendered Deployment by
// hand: in mode warn the release reports it and leaves it; in mode enabled the
// manifest's value is applied back.
func TestHelmRelease_DriftIsWarnedThenCorrected(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "drifty", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.DriftDetection = &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionWarn}
	})
	hr := readyAt(t, ns, "drifty")
	g.Expect(condition(hr, kraanv1.DriftedCondition).Status).To(Equal(metav1.ConditionFalse))

	g.Eventually(func(g Gomega) {
		d := deployment(g, ns, "drifty")
		d.Spec.Replicas = ptr.To[int32](3)
		g.Expect(k8s.Update(ctx, d)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	annotate(t, ns, "drifty", map[string]string{"reconcile.fluxcd.io/requestedAt": time.Now().String()})
	g.Eventually(func(g Gomega) {
		drifted := condition(get(g, ns, "drifty"), kraanv1.DriftedCondition)
		g.Expect(drifted.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(drifted.Message).To(ContainSubstring("Deployment/" + ns + "/drifty changed at [/spec/replicas]"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(*deployment(g, ns, "drifty").Spec.Replicas).To(Equal(int32(3)), "mode warn changed the object")

	update(t, ns, "drifty", func(hr *kraanv1.HelmRelease) { hr.Spec.DriftDetection.Mode = kraanv1.DriftDetectionEnabled })
	g.Eventually(func(g Gomega) {
		drifted := condition(get(g, ns, "drifty"), kraanv1.DriftedCondition)
		g.Expect(drifted.Reason).To(Equal(kraanv1.ReasonDriftCorrected))
		g.Expect(*deployment(g, ns, "drifty").Spec.Replicas).To(Equal(int32(1)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(helmRevisions(g, ns, "drifty")).To(ConsistOf("1=deployed"), "correcting drift is not an upgrade")
}

// TestHelmRelease_DriftExclusions: Flux's ways to leave objects out of drift
// correction. An ignore rule applies only to the objects its target's label
// selector selects (here none, so the Deployment's replicas are corrected);
// an object annotated helm.toolkit.fluxcd.io/driftDetection: disabled in the
// cluster is not compared at all, while the others are corrected.
func TestHelmRelease_DriftExclusions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "excluded", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.DriftDetection = &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionEnabled, Ignore: []kraanv1.IgnoreRule{{
			Paths:  []string{"/spec/replicas"},
			Target: &kraanv1.ObjectSelector{Kind: "Deployment", LabelSelector: "app.kubernetes.io/instance=another-release"},
		}}}
	})
	readyAt(t, ns, "excluded")

	g.Eventually(func(g Gomega) {
		d := deployment(g, ns, "excluded")
		d.Spec.Replicas = ptr.To[int32](3)
		g.Expect(k8s.Update(ctx, d)).To(Succeed())
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "excluded"}, cm)).To(Succeed())
		cm.Data["message"] = "edited by hand"
		cm.Annotations = map[string]string{"helm.toolkit.fluxcd.io/driftDetection": "disabled"}
		g.Expect(k8s.Update(ctx, cm)).To(Succeed())
		svc := &corev1.Service{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "excluded"}, svc)).To(Succeed())
		svc.Labels["app.kubernetes.io/managed-by"] = "by-hand"
		g.Expect(k8s.Update(ctx, svc)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// A reconcile still running from the install may check drift between
	// the edits above, so the corrections can be split over two checks. The
	// second check's DriftCorrected event joins the first's event series
	// (events.k8s.io keys a series by reason and object, not by note), so
	// its message cannot be read back: what was corrected is read from the
	// cluster, with a check after the last edit asked for on each poll, and
	// what was compared from every Drifted message and event seen.
	g.Eventually(func(g Gomega) {
		annotate(t, ns, "excluded", map[string]string{"reconcile.fluxcd.io/requestedAt": time.Now().String()})
		reported := strings.Join(eventMessages(g, ns, "excluded", kraanv1.ReasonDriftCorrected), "\n")
		if drifted := condition(get(g, ns, "excluded"), kraanv1.DriftedCondition); drifted != nil {
			reported += "\n" + drifted.Message
		}
		g.Expect(reported).NotTo(ContainSubstring("ConfigMap"), "an object annotated driftDetection: disabled was compared")
		g.Expect(*deployment(g, ns, "excluded").Spec.Replicas).To(Equal(int32(1)),
			"an ignore rule whose selector does not select the Deployment applied to it")
		svc := &corev1.Service{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "excluded"}, svc)).To(Succeed())
		g.Expect(svc.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"), "the Service's drift was not corrected")
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
	g.Expect(strings.Join(eventMessages(g, ns, "excluded", kraanv1.ReasonDriftCorrected), "\n")).To(
		ContainSubstring("Deployment/" + ns + "/excluded changed at [/spec/replicas]"))
	g.Expect(configMapData(g, ns, "excluded")).To(HaveKeyWithValue("message", "edited by hand"), "the annotated object was corrected")
}

// TestHelmRelease_DriftCorrectionKeepsIgnoredFields: as in Flux, correcting
// drift touches only the drifted fields no ignore rule covers. With
// /spec/replicas ignored on Deployments, a Deployment scaled by hand (as an
// HPA would scale it) whose image and a label were also edited gets its image
// and label back and keeps its 3 replicas, on this pass and the next. A
// deleted Deployment is created again whole, replicas from the manifest, and
// still belongs to the release: drift on it afterwards is corrected too, and
// an upgrade still changes the fields the corrections put back.
func TestHelmRelease_DriftCorrectionKeepsIgnoredFields(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns)
	newRelease(t, ns, "scaled", "small", func(hr *kraanv1.HelmRelease) {
		hr.Spec.DriftDetection = &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionEnabled, Ignore: []kraanv1.IgnoreRule{{
			Paths: []string{"/spec/replicas"}, Target: &kraanv1.ObjectSelector{Kind: "Deployment"},
		}}}
	})
	readyAt(t, ns, "scaled")

	scaleAndEdit(t, ns, "scaled", 3)
	annotate(t, ns, "scaled", map[string]string{"reconcile.fluxcd.io/requestedAt": "edited"})
	g.Eventually(func(g Gomega) {
		drifted := condition(get(g, ns, "scaled"), kraanv1.DriftedCondition)
		g.Expect(drifted).NotTo(BeNil())
		g.Expect(drifted.Reason).To(Equal(kraanv1.ReasonDriftCorrected))
		g.Expect(drifted.Message).To(ContainSubstring("Deployment/" + ns + "/scaled changed at " +
			"[/metadata/labels/app.kubernetes.io~1version /spec/template/spec/containers/0/image]"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	d := deployment(g, ns, "scaled")
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.10"))
	g.Expect(d.Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "1.0.0"))
	g.Expect(*d.Spec.Replicas).To(Equal(int32(3)), "correcting drift reset an ignored field")

	// The next pass finds nothing to correct, and leaves the replicas alone.
	annotate(t, ns, "scaled", map[string]string{"reconcile.fluxcd.io/requestedAt": "again"})
	g.Eventually(func(g Gomega) {
		drifted := condition(get(g, ns, "scaled"), kraanv1.DriftedCondition)
		g.Expect(drifted).NotTo(BeNil())
		g.Expect(drifted.Reason).To(Equal(kraanv1.ReasonNoDriftDetected))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(*deployment(g, ns, "scaled").Spec.Replicas).To(Equal(int32(3)))

	deleted := deployment(g, ns, "scaled")
	g.Expect(k8s.Delete(ctx, deleted)).To(Succeed())
	annotate(t, ns, "scaled", map[string]string{"reconcile.fluxcd.io/requestedAt": "deleted"})
	g.Eventually(func(g Gomega) {
		d := deployment(g, ns, "scaled")
		g.Expect(d.UID).NotTo(Equal(deleted.UID))
		g.Expect(*d.Spec.Replicas).To(Equal(int32(1)), "a re-created object takes its ignored fields from the manifest")
		g.Expect(d.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", "scaled"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	scaleAndEdit(t, ns, "scaled", 2)
	annotate(t, ns, "scaled", map[string]string{"reconcile.fluxcd.io/requestedAt": "edited after re-creation"})
	g.Eventually(func(g Gomega) {
		d := deployment(g, ns, "scaled")
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.10"),
			"the re-created Deployment is no longer corrected")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// The fields a correction put back stay the chart's to change: an
	// upgrade to another image is not refused as a conflict with the
	// operator's drift corrections.
	update(t, ns, "scaled", func(hr *kraanv1.HelmRelease) {
		hr.Spec.Values = toJSON(map[string]any{"image": "registry.k8s.io/pause:3.9"})
	})
	readyAt(t, ns, "scaled")
	g.Expect(deployment(g, ns, "scaled").Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.9"))
}

// scaleAndEdit scales a Deployment by hand and edits its image and its
// app.kubernetes.io/version label.
func scaleAndEdit(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		d := deployment(g, ns, name)
		d.Spec.Replicas = ptr.To(replicas)
		d.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9"
		d.Labels["app.kubernetes.io/version"] = "edited-by-hand"
		g.Expect(k8s.Update(context.Background(), d)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
