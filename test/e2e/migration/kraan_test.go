package migration_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// kraanHelmReleaseKind is how Kraan's controller names the kind of each
// entry of status.resources.
const kraanHelmReleaseKind = "helmreleases.helm.toolkit.fluxcd.io"

// TestMigration_FromKraan runs docs/migrating-from-kraan.md's blocks as
// written on a cluster Kraan ran: Kraan's release (a chart shaped as Kraan's:
// the AddonsLayer CRD as a template, Kraan's controller, source-controller
// and helm-controller as Deployments) in Kraan's namespace, two layers (apps
// depends on base; base leaves source.namespace empty, reading Kraan's
// namespace as Kraan did) in the state Kraan's controller leaves them (its
// finalizer, its status, its inventory), whose Flux HelmReleases (Kraan's
// label and controller owner) the real helm-controller installed. The
// operator is installed while Kraan and helm-controller still run and must
// write nothing; `kubectl kraan takeover --all` refuses until both are
// stopped, then hands the layers over dependencies first, and the operator
// adopts every release in place: no revision moved, no object re-created, no
// pod restarted. Removing Kraan's release as the page says keeps the CRD and
// the layers.
func TestMigration_FromKraan(t *testing.T) {
	m := newMigration(t, "kraan")
	doc := openGuide(t, "migrating-from-kraan.md")
	kraanNS, operatorNS := suite.NewNamespace(t, k8s, "gotk-system"), suite.NewNamespace(t, k8s, "kraan-system")
	chart := installKraanChart(t, kraanNS)
	base := kraanLayer(t, m.namespace+"-base", "", "./base")
	apps := kraanLayer(t, m.namespace+"-apps", kraanNS, "./apps", base.Name+"@"+base.Spec.Version)
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
	revision := gitRepository(t, kraanNS, "addons", files)
	m.installWithFlux(t, func(hr *unstructured.Unstructured) { appliedByKraan(hr, layerOf[hr.GetName()]) })
	for _, l := range []*kraanv1.AddonsLayer{base, apps} {
		writeKraanStatus(t, l, revision, m.objs, layerOf)
	}
	written := writesOf(t, m, base, apps)
	const section = "Step by step"
	doc.sh.Set("KRAAN_NS", kraanNS, "OPERATOR_NS", operatorNS, "OPERATOR_DEPLOYMENT", "kraan-controller-manager")

	// 1. Save what Kraan manages.
	doc.run(t, section, 1)
	saved, err := os.ReadFile(filepath.Join(doc.sh.Dir, "kraan-backup.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{base.Name, apps.Name} {
		NewWithT(t).Expect(string(saved)).To(ContainSubstring("name: "+name), "the saved YAML lacks layer %s", name)
	}
	for _, o := range m.objs {
		NewWithT(t).Expect(string(saved)).To(ContainSubstring("name: "+o.GetName()), "the saved YAML lacks Flux HelmRelease %s", o.GetName())
	}

	// 2. The settings ConfigMap points the operator at Kraan's namespace;
	// 3. the operator, installed next to the running Kraan and
	// helm-controller, sees both layers and writes nothing. It runs as a
	// process here: `kubectl logs` of its Deployment reads its log file.
	doc.run(t, section, 2)
	m.handedOver = time.Now()
	op := startOperatorWithEnv(t, []string{"RUNTIME_NAMESPACE=" + operatorNS})
	doc.sh.StandIn(`kubectl logs -n "$OPERATOR_NS" "deploy/$OPERATOR_DEPLOYMENT"`, "cat '"+op.LogPath()+"'")
	NewWithT(t).Eventually(func(g Gomega) {
		for _, l := range []*kraanv1.AddonsLayer{base, apps} {
			g.Expect(logHasLine(op.Log(), "layer awaits take-over", l.Name)).To(BeTrue(), "the operator did not report %s as awaiting the take-over", l.Name)
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	awaiting := doc.run(t, section, 3)
	NewWithT(t).Expect(awaiting).To(ContainSubstring(base.Name))
	expectNoWrite(t, m, written)

	// The take-over refuses while Kraan or helm-controller runs.
	code, out := takeOver(t, "--all")
	NewWithT(t).Expect(code).To(Equal(plugin.ExitError), out)
	for _, d := range []string{"kraan-controller", "helm-controller"} {
		NewWithT(t).Expect(out).To(ContainSubstring("kubectl scale deployment "+d+" -n "+kraanNS+" --replicas=0"), out)
	}
	expectNoWrite(t, m, written)
	t.Logf("Writes by the operator before the take-over: 0 (2 layers, %d Flux HelmReleases, their Helm records and workloads unchanged)", len(m.objs))

	// 4. Stop them: the Deployments by the page's command, the real
	// helm-controller (a process here) with them.
	doc.run(t, section, 4)
	NewWithT(t).Expect(m.helmController.Stop(stopGrace)).To(Succeed())

	// 5. Take over, dependencies first.
	out = doc.run(t, section, 5)
	NewWithT(t).Expect(strings.Index(out, "took over AddonsLayer "+base.Name)).To(BeNumerically("<", strings.Index(out, "took over AddonsLayer "+apps.Name)), out)

	// 6. Every release adopted in place; both layers Deployed by the operator.
	doc.run(t, section, 6)
	m.expectAdopted(t)
	for _, l := range []*kraanv1.AddonsLayer{base, apps} {
		expectLayerDeployed(t, l.Name)
	}

	// 7. The Flux HelmReleases go (their finalizer first: helm-controller is
	// gone); Helm storage does not change.
	doc.run(t, section, 7)
	for _, o := range m.objs {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), &helmv2.HelmRelease{})
		NewWithT(t).Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Flux HelmRelease %s: %v", o.GetName(), err)
	}
	expectStorage(t, m.flux, m.before.storage)

	// 8. Kraan's release loses its controller, helm-controller and the CRD
	// template; the CRD, the layers and source-controller stay.
	doc.sh.Set("KRAAN_CHART", chart, "KRAAN_CHART_VERSION", "0.3.52")
	doc.run(t, section, 8)
	g := NewWithT(t)
	for name, kept := range map[string]bool{"kraan-controller": false, "helm-controller": false, "source-controller": true} {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: kraanNS, Name: name}, &appsv1.Deployment{})
		if kept {
			g.Expect(err).NotTo(HaveOccurred(), "Deployment %s", name)
		} else {
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment %s: %v", name, err)
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: "addonslayers.kraan.io"}, crd)).To(Succeed())
	g.Expect(crd.DeletionTimestamp).To(BeNil(), "the AddonsLayer CRD is being deleted")
	for _, l := range []*kraanv1.AddonsLayer{base, apps} {
		expectLayerDeployed(t, l.Name)
	}
	expectStorage(t, m.flux, m.before.storage)
}

// installKraanChart installs testdata/kraan-chart, a chart shaped as
// Kraan's, with the operator's AddonsLayer CRD in it, as release "kraan" in
// namespace, as Kraan's users did with `helm install`; the CRD the suite
// installed is taken over by the release, as Kraan's chart owned it. It
// returns the chart's directory.
func installKraanChart(t *testing.T, namespace string) string {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	chart := filepath.Join(t.TempDir(), "kraan-controller")
	g.Expect(os.CopyFS(chart, os.DirFS(filepath.Join("testdata", "kraan-chart")))).To(Succeed())
	crd, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "kraan.io_addonslayers.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(filepath.Join(chart, "files"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(chart, "files", "addonslayers.yaml"), crd, 0o644)).To(Succeed())
	helm := exec.CommandContext(t.Context(), os.Getenv("KRAAN_HELM_CLI"), "install", "kraan", chart, "-n", namespace,
		"--take-ownership", "--wait", "--timeout=2m")
	helm.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir())
	out, err := helm.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "helm install kraan: %s", out)
	return chart
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
