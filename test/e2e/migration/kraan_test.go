package migration_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// kraanHelmReleaseKind is how Kraan's controller names the kind of each
// entry of status.resources.
const kraanHelmReleaseKind = "helmreleases.helm.toolkit.fluxcd.io"

// TestMigration_FromKraan follows docs/migrating-from-kraan.md, step by
// step, on a cluster Kraan ran: two layers (apps depends on base) in the
// state Kraan's controller leaves them (its finalizer, its status, its
// inventory), whose Flux HelmReleases (Kraan's label and controller owner)
// helm-controller installed. The operator is installed while Kraan and
// helm-controller still run and must write nothing; `kubectl kraan
// takeover --all` refuses until both are stopped, then hands the layers over
// dependencies first, and the operator adopts every release in place: no
// revision moved, no object re-created, no pod restarted.
func TestMigration_FromKraan(t *testing.T) {
	m := newMigration(t, "kraan")
	base := kraanLayer(t, m.namespace+"-base", m.namespace, "./base")
	apps := kraanLayer(t, m.namespace+"-apps", m.namespace, "./apps", base.Name+"@"+base.Spec.Version)
	// base holds the first three releases, apps the rest: dependent (in
	// apps) waits for from-values (in base).
	layerOf := map[string]*kraanv1.AddonsLayer{}
	files := map[string]string{}
	for i, o := range m.objs {
		l, dir := base, "base"
		if i >= 3 {
			l, dir = apps, "apps"
		}
		layerOf[o.GetName()] = l
		files[dir+"/releases.yaml"] += "---\n" + toYAML(t, o.Object)
	}
	revision := gitRepository(t, m.namespace, "addons", files)
	m.installWithFlux(t, func(hr *unstructured.Unstructured) { appliedByKraan(hr, layerOf[hr.GetName()]) })
	for _, l := range []*kraanv1.AddonsLayer{base, apps} {
		writeKraanStatus(t, l, revision, m.objs, layerOf)
	}
	controllers := controllerDeployments(t)
	written := writesOf(t, m, base, apps)

	// 1. Save what Kraan manages.
	saved := saveYAML(t, m.namespace)
	for _, name := range []string{base.Name, apps.Name} {
		NewWithT(t).Expect(saved).To(ContainSubstring("name: "+name), "the saved YAML lacks layer %s", name)
	}
	for _, o := range m.objs {
		NewWithT(t).Expect(saved).To(ContainSubstring("name: "+o.GetName()), "the saved YAML lacks Flux HelmRelease %s", o.GetName())
	}

	// 2. Install the operator next to the running Kraan and helm-controller:
	// it sees both layers and writes nothing.
	m.handedOver = time.Now()
	op := startOperator(t)
	NewWithT(t).Eventually(func(g Gomega) {
		for _, l := range []*kraanv1.AddonsLayer{base, apps} {
			g.Expect(logHasLine(op.Log(), "layer awaits take-over", l.Name)).To(BeTrue(), "the operator did not report %s as awaiting the take-over", l.Name)
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	expectNoWrite(t, m, written)

	// 3. The take-over refuses while Kraan or helm-controller runs; stop them.
	code, out := takeOver(t, "--all")
	NewWithT(t).Expect(code).To(Equal(plugin.ExitError), out)
	for _, d := range controllers {
		NewWithT(t).Expect(out).To(ContainSubstring("kubectl scale deployment "+d.Name+" -n "+d.Namespace+" --replicas=0"), out)
	}
	expectNoWrite(t, m, written)
	t.Logf("Writes by the operator before the take-over: 0 (2 layers, %d Flux HelmReleases, their Helm records and workloads unchanged)", len(m.objs))
	scaleToZero(t, controllers)
	NewWithT(t).Expect(m.helmController.Stop(stopGrace)).To(Succeed())

	// 4. Take over, dependencies first.
	code, out = takeOver(t, "--all", "--timeout=4m")
	NewWithT(t).Expect(code).To(Equal(plugin.ExitOK), out)
	NewWithT(t).Expect(strings.Index(out, "took over AddonsLayer "+base.Name)).To(BeNumerically("<", strings.Index(out, "took over AddonsLayer "+apps.Name)), out)

	// 5. Every release adopted in place; both layers Deployed by the operator.
	m.expectAdopted(t)
	for _, l := range []*kraanv1.AddonsLayer{base, apps} {
		expectLayerDeployed(t, l.Name)
	}

	// 6. The Flux HelmReleases go (their finalizer first: helm-controller is
	// gone); Helm storage does not change.
	removeFluxHelmReleases(t, m.namespace, m.objs)
	expectStorage(t, m.flux, m.before.storage)
}

// kraanLayer creates an AddonsLayer as Kraan's controller keeps one: Kraan's
// finalizer, Kraan's empty source kind (a GitRepository) and
// k8sVersion without the v.
func kraanLayer(t *testing.T, name, namespace, path string, dependsOn ...string) *kraanv1.AddonsLayer {
	t.Helper()
	l := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{kraanv1.Finalizer}},
		Spec: kraanv1.AddonsLayerSpec{
			Version:  "0.1.01",
			Source:   kraanv1.SourceSpec{Name: "addons", Namespace: namespace, Path: path},
			Prereqs:  kraanv1.PrereqsSpec{K8sVersion: "1.16", DependsOn: dependsOn},
			Interval: metav1.Duration{Duration: time.Minute},
			Timeout:  metav1.Duration{Duration: 4 * time.Minute},
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), l)).To(Succeed())
	t.Cleanup(func() {
		// The operator's finalizer once taken over; a failed test leaves
		// Kraan's for nobody to remove.
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		_ = k8s.Patch(context.Background(), l, patch)
		_ = k8s.Delete(context.Background(), l)
	})
	return l
}

// appliedByKraan makes hr what Kraan's controller applies for layer: its
// layer label and a controller ownerReference to the layer.
func appliedByKraan(hr *unstructured.Unstructured, layer *kraanv1.AddonsLayer) {
	labels := hr.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[manifest.KraanLayerLabel] = layer.Name
	hr.SetLabels(labels)
	hr.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: kraanv1.GroupVersion.String(), Kind: "AddonsLayer",
		Name: layer.Name, UID: layer.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}})
}

// writeKraanStatus writes the status Kraan's controller writes for a
// Deployed layer: the whole status replaced, one condition named after the
// state, the revision deployed and its HelmReleases as the inventory.
func writeKraanStatus(t *testing.T, l *kraanv1.AddonsLayer, revision string, objs []*unstructured.Unstructured,
	layerOf map[string]*kraanv1.AddonsLayer) {
	t.Helper()
	var resources []kraanv1.Resource
	for _, o := range objs {
		if layerOf[o.GetName()] == l {
			resources = append(resources, kraanv1.Resource{Kind: kraanHelmReleaseKind, Namespace: o.GetNamespace(), Name: o.GetName(),
				Status: kraanv1.DeployedState, LastTransitionTime: metav1.Now()})
		}
	}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(l), l)).To(Succeed())
		l.Status = kraanv1.AddonsLayerStatus{State: kraanv1.DeployedState, Version: l.Spec.Version, Revision: revision,
			ObservedGeneration: l.Generation, Resources: resources,
			Conditions: []metav1.Condition{{Type: kraanv1.DeployedState, Status: metav1.ConditionTrue, Reason: kraanv1.DeployedState,
				Message:            "AddonsLayer version " + l.Spec.Version + " is Deployed, All HelmReleases deployed",
				LastTransitionTime: metav1.Now(), ObservedGeneration: l.Generation}}}
		g.Expect(k8s.Status().Update(context.Background(), l)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	NewWithT(t).Expect(l.AwaitsTakeOver()).To(BeTrue(), "layer %s with Kraan's status", l.Name)
}

// controllerDeployments creates the Deployments of Kraan's controller and
// helm-controller as Kraan's chart names them, one replica each. The
// controllers themselves run outside the plane (helm-controller as a
// process, Kraan not at all): these are what an operator of the cluster sees.
func controllerDeployments(t *testing.T) []*appsv1.Deployment {
	t.Helper()
	ns := suite.NewNamespace(t, k8s, "gotk-system")
	out := make([]*appsv1.Deployment, 0, 2)
	for name, image := range map[string]string{
		"kraan-controller": "docker.pkg.github.com/fidelity/kraan/kraan-controller:v0.3.52",
		"helm-controller":  "ghcr.io/fluxcd/helm-controller:v1.4.5",
	} {
		labels := map[string]string{"app": name}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image}}}}},
		}
		NewWithT(t).Expect(k8s.Create(context.Background(), d)).To(Succeed())
		out = append(out, d)
	}
	return out
}

// scaleToZero is `kubectl scale deployment … --replicas=0`, waiting until
// the pods are gone.
func scaleToZero(t *testing.T, deployments []*appsv1.Deployment) {
	t.Helper()
	for _, d := range deployments {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
		NewWithT(t).Expect(k8s.Patch(context.Background(), d, patch)).To(Succeed())
	}
	NewWithT(t).Eventually(func(g Gomega) {
		for _, d := range deployments {
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(d), d)).To(Succeed())
			g.Expect(d.Status.Replicas).To(BeZero(), "Deployment %s", d.Name)
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// writes is what a write by the operator before the take-over would change.
type writes struct {
	// layers are the resourceVersions of the layers: nothing else writes
	// them (Kraan's controller does not run here).
	layers map[string]string
	// managers are the field managers of each Flux HelmRelease;
	// helm-controller may write its status, the operator must not appear.
	managers map[string][]string
}

func writesOf(t *testing.T, m *migration, layers ...*kraanv1.AddonsLayer) writes {
	t.Helper()
	w := writes{layers: map[string]string{}, managers: map[string][]string{}}
	for _, l := range layers {
		live := &kraanv1.AddonsLayer{}
		NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(l), live)).To(Succeed())
		w.layers[l.Name] = live.ResourceVersion
	}
	for _, o := range m.objs {
		hr := &helmv2.HelmRelease{}
		NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(o), hr)).To(Succeed())
		for _, f := range hr.ManagedFields {
			if !slices.Contains(w.managers[o.GetName()], f.Manager) {
				w.managers[o.GetName()] = append(w.managers[o.GetName()], f.Manager)
			}
		}
	}
	return w
}

// expectNoWrite checks that the layers and the Flux HelmReleases were not
// written, that no kraan.io HelmRelease exists, and that Helm storage and
// the workloads are as Flux left them.
func expectNoWrite(t *testing.T, m *migration, before writes) {
	t.Helper()
	g := NewWithT(t)
	now := writesOf(t, m, layersNamed(before.layers)...)
	g.Expect(now.layers).To(Equal(before.layers), "the operator wrote to a layer before the take-over")
	for name, managers := range now.managers {
		g.Expect(managers).To(ConsistOf(before.managers[name]), "a new field manager on Flux HelmRelease %s", name)
	}
	releases := &kraanv1.HelmReleaseList{}
	g.Expect(k8s.List(context.Background(), releases, client.InNamespace(m.namespace))).To(Succeed())
	g.Expect(releases.Items).To(BeEmpty(), "the operator created HelmReleases before the take-over")
	expectStorage(t, m.flux, m.before.storage)
	after := snapshot(t, m.flux, m.namespace, m.target)
	g.Expect(restartedPods(m.before.workloads, after.workloads)).To(BeZero(), "pods restarted before the take-over")
}

func layersNamed(versions map[string]string) []*kraanv1.AddonsLayer {
	out := make([]*kraanv1.AddonsLayer, 0, len(versions))
	for name := range versions {
		out = append(out, &kraanv1.AddonsLayer{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return out
}

// saveYAML is the guide's first step, `kubectl get addonslayers,
// helmreleases.helm.toolkit.fluxcd.io -A -o yaml > kraan-backup.yaml`:
// it returns what the file holds.
func saveYAML(t *testing.T, namespace string) string {
	t.Helper()
	layers := &kraanv1.AddonsLayerList{}
	NewWithT(t).Expect(k8s.List(context.Background(), layers)).To(Succeed())
	releases := &helmv2.HelmReleaseList{}
	NewWithT(t).Expect(k8s.List(context.Background(), releases, client.InNamespace(namespace))).To(Succeed())
	var b strings.Builder
	for _, list := range []any{layers, releases} {
		b.WriteString("---\n" + toYAML(t, list))
	}
	path := filepath.Join(t.TempDir(), "kraan-backup.yaml")
	NewWithT(t).Expect(os.WriteFile(path, []byte(b.String()), 0o600)).To(Succeed())
	return b.String()
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// logHasLine says whether one line of log holds every part.
func logHasLine(log string, parts ...string) bool {
	for line := range strings.SplitSeq(log, "\n") {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return true
		}
	}
	return false
}

// takeOver runs `kubectl kraan takeover args…` and returns its exit code
// and what it printed.
func takeOver(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := plugin.Run(t.Context(), append(append([]string{"takeover"}, args...), "--kubeconfig="+kubeconfig),
		genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	t.Logf("kubectl kraan takeover %s (exit %d):\n%s", strings.Join(args, " "), code, out.String())
	return code, out.String()
}

// expectLayerDeployed waits until the operator has the layer Ready and
// Deployed at its generation.
func expectLayerDeployed(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		l := &kraanv1.AddonsLayer{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, l)).To(Succeed())
		g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
		for _, c := range []string{kraanv1.ReadyCondition, kraanv1.DeployedCondition} {
			cond := apimeta.FindStatusCondition(l.Status.Conditions, c)
			g.Expect(cond).NotTo(BeNil(), "layer %s has no %s condition", name, c)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "layer %s: %s", name, cond.Message)
		}
		g.Expect(l.Finalizers).To(Equal([]string{kraanv1.Finalizer}))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// removeFluxHelmReleases deletes the Flux HelmReleases Kraan applied once
// helm-controller is gone: their finalizer is removed first, as the guide
// says, since no controller is left to remove it.
func removeFluxHelmReleases(t *testing.T, namespace string, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	for _, o := range objs {
		hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		g.Expect(k8s.Patch(context.Background(), hr, patch)).To(Succeed())
		g.Expect(k8s.Delete(context.Background(), hr)).To(Succeed())
	}
	charts := &sourcev1.HelmChartList{}
	g.Expect(k8s.List(context.Background(), charts, client.InNamespace(namespace))).To(Succeed())
	for i := range charts.Items {
		g.Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), &charts.Items[i]))).To(Succeed())
	}
}
