package uninstall_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/test/env"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// The workload: standalone releases web and cache, layer base (a ConfigMap
// and the release layered), and the Habitat hab, all in namespace apps.
const (
	appsNamespace = "apps"
	layerName     = "base"
	habitatName   = "hab"
)

var standaloneReleases = []string{"web", "cache"}

// ourFinalizers are the operator's: none may be left after uninstall.
var ourFinalizers = []string{kraanv1.Finalizer, "kraan.io/uninstall-helm-release"}

// operatorLabel selects every object of the operator's installation.
var operatorLabel = client.MatchingLabels{"app.kubernetes.io/name": "kraan-operator"}

// TestUninstall removes the operator with `kubectl kraan uninstall` and
// checks that nothing it managed moved, installs it again and checks that
// it adopts everything without a new revision, then removes it with --crds
// and checks that the workloads still stay.
func TestUninstall(t *testing.T) {
	deployOperator(t)
	first := startOperatorPod(t, "operator-1")
	createWorkload(t)
	waitManaged(t)
	before := takeSnapshot(t)
	crds := testenv.OperatorCRDNames(t)
	t.Logf("workload: %d Helm releases, %d revisions, %d objects", len(before.revisions), sum(before.revisions), len(before.uids))

	t.Run("DryRunAndUnconfirmedDestruction_ChangeNothing", func(t *testing.T) {
		g := NewWithT(t)
		r := kraan(t, "uninstall", "--dry-run", "--crds", "--delete-namespace")
		g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
		g.Expect(r.stdout).To(ContainSubstring("finalizer removed from HelmRelease apps/web (dry run)"))
		r = kraan(t, "uninstall", "--uninstall-releases")
		g.Expect(r.code).To(Equal(plugin.ExitError), r.stdout)
		g.Expect(r.stderr).To(ContainSubstring("not confirmed"))
		g.Expect(first.State()).To(BeNil(), "the operator still runs")
		g.Expect(finalizedResources(g)).To(HaveLen(len(before.resources)), "every custom resource keeps its finalizer")
		expectUnchanged(t, before, takeSnapshot(t), true)
	})

	t.Run("KeepsReleasesRecordsAndObjects", func(t *testing.T) {
		g := NewWithT(t)
		r := kraan(t, "uninstall")
		t.Log(r.stdout)
		g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
		g.Expect(first.State()).NotTo(BeNil(), "the operator process was stopped")
		expectOperatorGone(g)
		g.Expect(finalizedResources(g)).To(BeEmpty(), "no finalizer of the operator is left")
		g.Expect(crdsPresent(crds)(g)).To(Equal(len(crds)), "the CRDs stay without --crds")
		expectUnchanged(t, before, takeSnapshot(t), true)
	})

	t.Run("Reinstall_AdoptsWithoutNewRevisions", func(t *testing.T) {
		deployOperator(t)
		startOperatorPod(t, "operator-2")
		g := NewWithT(t)
		g.Eventually(finalizedResources).WithTimeout(timeout).WithPolling(poll).Should(HaveLen(len(before.resources)),
			"the operator puts its finalizers back: it reconciled every custom resource")
		for _, name := range append(slices.Clone(standaloneReleases), "layered") {
			r := kraan(t, "reconcile", "helmrelease", "-n", appsNamespace, name)
			g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
		}
		r := kraan(t, "reconcile", "layer", layerName)
		g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
		waitManaged(t)
		expectUnchanged(t, before, takeSnapshot(t), true)
	})

	t.Run("DeletingTheCRDs_KeepsEveryWorkload", func(t *testing.T) {
		// Issue #43: OLM v1 deletes the CRDs it installed, and people delete
		// CRDs by mistake, while the operator runs. Every object of the
		// kinds goes, and no finalizer may uninstall or prune on the way.
		running := startOperatorPod(t, "operator-3")
		g := NewWithT(t)
		ctx := context.Background()
		for _, name := range crds {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			g.Expect(k8s.Delete(ctx, crd)).To(Succeed())
		}
		g.Eventually(crdsPresent(crds)).WithTimeout(timeout).WithPolling(poll).Should(BeZero(), "the operator let every object go")
		g.Expect(running.State()).To(BeNil(), "the operator still runs")
		after := takeSnapshot(t)
		g.Expect(after.resources).To(BeEmpty())
		expectUnchanged(t, before, after, false)
		expectOrphaned(g)

		// The kinds and their objects come back: the operator adopts every
		// release. A HelmRelease's revision is its record signed for the new
		// object; a Habitat's release gets one revision, as its objects'
		// owner reference names the new Habitat.
		g.Expect(testenv.InstallCRDs(restConfig)).To(Succeed())
		createResources(t)
		waitManaged(t)
		back := takeSnapshot(t)
		g.Expect(back.revisions[habitatName]).To(BeNumerically("<=", before.revisions[habitatName]+1))
		back.revisions[habitatName] = before.revisions[habitatName]
		expectUnchanged(t, before, back, false)
		before = takeSnapshot(t) // the custom resources are new
	})

	t.Run("CRDs_WorkloadsStay", func(t *testing.T) {
		g := NewWithT(t)
		r := kraan(t, "uninstall", "--crds")
		t.Log(r.stdout)
		g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
		expectOperatorGone(g)
		g.Eventually(crdsPresent(crds)).WithTimeout(timeout).WithPolling(poll).Should(BeZero(), "--crds deletes the CRDs")
		after := takeSnapshot(t)
		g.Expect(after.resources).To(BeEmpty())
		expectUnchanged(t, before, after, false)
		expectOrphaned(g)
	})
}

// expectOrphaned: the Habitat's StatefulSet stays, owned by nothing.
func expectOrphaned(g Gomega) {
	sts := &appsv1.StatefulSetList{}
	g.Expect(k8s.List(context.Background(), sts, client.InNamespace(appsNamespace))).To(Succeed())
	g.Expect(sts.Items).NotTo(BeEmpty(), "the Habitat's StatefulSet stays")
	for _, s := range sts.Items {
		g.Expect(s.OwnerReferences).To(BeEmpty(), "StatefulSet %s was orphaned", s.Name)
	}
}

// createWorkload creates the namespace, commits the layer's source, and
// creates the custom resources.
func createWorkload(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appsNamespace}})).To(Succeed())
	commitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := sources.Commit(commitCtx, "layer base", map[string]string{"layers": "testdata/layers"})
	g.Expect(err).NotTo(HaveOccurred())
	createResources(t)
}

// createResources creates the standalone releases, the layer and the
// Habitat.
func createResources(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, name := range standaloneReleases {
		g.Expect(k8s.Create(ctx, &kraanv1.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: appsNamespace, Name: name},
			Spec: kraanv1.HelmReleaseSpec{
				Interval: metav1.Duration{Duration: time.Hour},
				Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{Chart: "small", Version: "0.1.0",
					SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: env.HelmRepositoryName, Namespace: env.FluxNamespace}}},
			},
		})).To(Succeed())
	}
	g.Expect(k8s.Create(ctx, &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: layerName},
		Spec: kraanv1.AddonsLayerSpec{
			Version:  "0.1.0",
			Source:   kraanv1.SourceSpec{Name: env.GitRepositoryName, Namespace: env.FluxNamespace, Path: "./layers/base"},
			Interval: metav1.Duration{Duration: time.Hour},
			Timeout:  metav1.Duration{Duration: 2 * time.Minute},
		},
	})).To(Succeed())
	g.Expect(k8s.Create(ctx, &habitatv1.Habitat{
		ObjectMeta: metav1.ObjectMeta{Namespace: appsNamespace, Name: habitatName},
		Spec: habitatv1.HabitatSpec{Image: "habitat/redis:0", Count: 1,
			Service: habitatv1.ServiceSpec{Name: "redis", Topology: habitatv1.TopologyStandalone}},
	})).To(Succeed())
}

// waitManaged waits until every release and the Habitat are Ready and the
// layer Deployed, each at its generation.
func waitManaged(t *testing.T) {
	NewWithT(t).Eventually(func(g Gomega) {
		ctx := context.Background()
		hrs := &kraanv1.HelmReleaseList{}
		g.Expect(k8s.List(ctx, hrs, client.InNamespace(appsNamespace))).To(Succeed())
		g.Expect(hrs.Items).To(HaveLen(len(standaloneReleases) + 1))
		for _, hr := range hrs.Items {
			expectReady(g, "HelmRelease "+hr.Name, hr.Generation, hr.Status.ObservedGeneration, hr.Status.Conditions)
		}
		hab := &habitatv1.Habitat{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: appsNamespace, Name: habitatName}, hab)).To(Succeed())
		expectReady(g, "Habitat", hab.Generation, hab.Status.ObservedGeneration, hab.Status.Conditions)
		layer := &kraanv1.AddonsLayer{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: layerName}, layer)).To(Succeed())
		g.Expect(layer.Status.State).To(Equal(kraanv1.DeployedState), "%+v", layer.Status.Conditions)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

func expectReady(g Gomega, what string, generation, observed int64, conditions []metav1.Condition) {
	ready := apimeta.FindStatusCondition(conditions, kraanv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil(), what)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", what, ready.Message)
	g.Expect(observed).To(Equal(generation), what)
}

// snapshot is what must not move: the number of Helm revisions of each
// release, and the UID of every object of namespace apps (the releases'
// objects, the layer's ConfigMap, the Helm records) and of every custom
// resource.
type snapshot struct {
	revisions map[string]int
	uids      map[string]types.UID
	// resources are the custom resources' keys, also in uids.
	resources []string
}

func takeSnapshot(t *testing.T) snapshot {
	g := NewWithT(t)
	ctx := context.Background()
	s := snapshot{revisions: map[string]int{}, uids: map[string]types.UID{}}
	lists := map[string]client.ObjectList{"Deployment": &appsv1.DeploymentList{}, "StatefulSet": &appsv1.StatefulSetList{},
		"Service": &corev1.ServiceList{}, "ConfigMap": &corev1.ConfigMapList{}, "Secret": &corev1.SecretList{}}
	for kind, list := range lists {
		g.Expect(k8s.List(ctx, list, client.InNamespace(appsNamespace))).To(Succeed())
		s.add(kind, list)
	}
	records := &corev1.SecretList{}
	g.Expect(k8s.List(ctx, records, client.InNamespace(appsNamespace), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	for _, r := range records.Items {
		s.revisions[r.Labels["name"]]++
	}
	custom := map[string]client.ObjectList{"HelmRelease": &kraanv1.HelmReleaseList{}, "Habitat": &habitatv1.HabitatList{}, "AddonsLayer": &kraanv1.AddonsLayerList{}}
	for kind, list := range custom {
		if err := k8s.List(ctx, list); apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue // --crds removed the kind
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
		s.resources = append(s.resources, s.add(kind, list)...)
	}
	return s
}

// add records the UIDs of list's items and returns their keys.
func (s snapshot) add(kind string, list client.ObjectList) []string {
	var keys []string
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		obj := o.(client.Object)
		key := fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
		s.uids[key] = obj.GetUID()
		keys = append(keys, key)
		return nil
	})
	return keys
}

// expectUnchanged compares two snapshots and logs the figures; the custom
// resources' UIDs count only when withCustom (--crds deletes them).
func expectUnchanged(t *testing.T, before, after snapshot, withCustom bool) {
	t.Helper()
	moved := 0
	for release, n := range before.revisions {
		moved += abs(after.revisions[release] - n)
	}
	var recreated []string
	for key, uid := range before.uids {
		if !withCustom && slices.Contains(before.resources, key) {
			continue
		}
		if after.uids[key] != uid {
			recreated = append(recreated, key)
		}
	}
	slices.Sort(recreated)
	t.Logf("revisions moved %d, objects recreated %d (of %d releases, %d revisions and %d objects)",
		moved, len(recreated), len(before.revisions), sum(before.revisions), len(before.uids))
	g := NewWithT(t)
	g.Expect(after.revisions).To(Equal(before.revisions), "Helm revisions per release")
	g.Expect(recreated).To(BeEmpty(), "objects deleted or re-created")
}

// finalizedResources are the custom resources that carry a finalizer of the
// operator's.
func finalizedResources(g Gomega) []string {
	ctx := context.Background()
	var names []string
	lists := map[string]client.ObjectList{"HelmRelease": &kraanv1.HelmReleaseList{}, "Habitat": &habitatv1.HabitatList{}, "AddonsLayer": &kraanv1.AddonsLayerList{}}
	for kind, list := range lists {
		g.Expect(k8s.List(ctx, list)).To(Succeed())
		_ = apimeta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if slices.ContainsFunc(obj.GetFinalizers(), func(f string) bool { return slices.Contains(ourFinalizers, f) }) {
				names = append(names, kind+" "+obj.GetNamespace()+"/"+obj.GetName())
			}
			return nil
		})
	}
	return names
}

// expectOperatorGone: no Deployment, ServiceAccount or RBAC of the
// operator's installation is left, and no pod of it.
func expectOperatorGone(g Gomega) {
	ctx := context.Background()
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceAccountList{}, &corev1.ServiceList{},
		&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}} {
		g.Expect(k8s.List(ctx, list, operatorLabel)).To(Succeed())
		g.Expect(apimeta.LenList(list)).To(BeZero(), "%T", list)
	}
	g.Expect(operatorPods(g)).To(BeEmpty())
}

// crdsPresent counts the CRDs of names still served.
func crdsPresent(names []string) func(Gomega) int {
	return func(g Gomega) int {
		n := 0
		for _, name := range names {
			err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
			if err == nil {
				n++
			} else {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), err)
			}
		}
		return n
	}
}

// result is what one plugin command printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// kraan runs `kubectl kraan args…` in process, with nothing on standard input.
func kraan(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"--kubeconfig", kubeconfig}, args...)
	code := plugin.Run(t.Context(), args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
