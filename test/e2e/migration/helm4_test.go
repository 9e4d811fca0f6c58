package migration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
)

// fluxFieldManager is the field manager Flux helm-controller writes
// objects as: it sets the Helm SDK's kube.ManagedFieldsManager to its own
// name.
const fluxFieldManager = "helm-controller"

// helm4Release is one release installed the way Flux helm-controller v1.5+
// (Flux 2.8+) installs it with the Helm 4 SDK, and the HelmRelease that
// described it.
type helm4Release struct {
	name, targetNamespace string
	values                map[string]any
	// serverSideApply is the kraan.io HelmRelease's install.serverSideApply.
	serverSideApply *bool
}

// TestMigration_FromFluxHelm4Records: releases whose records the Helm 4 SDK
// wrote as Flux helm-controller v1.5+ writes them — server-side apply with
// forced conflicts (apply_method ssa), field manager helm-controller, Flux's
// origin labels on every object — are adopted by kraan-operator without a
// new revision or a restarted pod, keep apply_method ssa in every record it
// rewrites, and upgrade afterwards server-side, taking the fields
// helm-controller owned without a conflict.
//
// helm-controller v1.5+ is not served here (its module needs a newer Go), so
// the records are made with the same SDK calls its internal/action makes;
// docs/migrating-from-flux.md says which.
func TestMigration_FromFluxHelm4Records(t *testing.T) {
	g := NewWithT(t)
	m := &migration{start: time.Now(), namespace: suite.NewNamespace(t, k8s, "helm4"),
		target: suite.NewNamespace(t, k8s, "helm4-target")}
	releases := []helm4Release{
		{name: "app", values: map[string]any{}},
		{name: "tuned", targetNamespace: m.target, values: map[string]any{"message": "tuned", "replicaCount": 2}},
	}
	chartRepository(t, m.namespace)
	for _, r := range releases {
		m.flux = append(m.flux, installLikeFlux(t, m.namespace, r))
	}
	m.before = snapshot(t, m.flux, m.namespace, m.target)
	restartsBefore := containerRestarts(g, m.namespace, m.target)
	for _, f := range m.flux {
		g.Expect(suite.ApplyMethods(t, g, restConfig, m.namespace, f.release.name)).To(Equal(map[int]string{1: "ssa"}), "release %s", f.release)
	}
	g.Expect(configMapManagers(g, m.namespace, "app")).To(ContainElement(fluxFieldManager + ":Apply"))

	m.handedOver = time.Now()
	startOperator(t)
	for _, r := range releases {
		createHelm4Release(t, m.namespace, r)
	}
	m.expectAdopted(t)

	restarted := 0
	for uid, n := range containerRestarts(g, m.namespace, m.target) {
		restarted += int(n - restartsBefore[uid])
	}
	g.Expect(restarted).To(BeZero(), "container restarts")
	for _, f := range m.flux {
		g.Expect(suite.ApplyMethods(t, g, restConfig, m.namespace, f.release.name)).To(Equal(map[int]string{1: "ssa"}),
			"the records kraan-operator rewrote of %s", f.release)
	}
	t.Logf("adopted %d, revisions moved 0, restarted pods 0", len(m.flux))

	upgradeAfterAdoption(t, m.namespace, m.flux[0])
}

// upgradeAfterAdoption changes the values of an adopted release: auto keeps
// its server-side apply, and the forced apply takes the fields Flux's field
// manager owned (the ConfigMap's message) without a conflict.
func upgradeAfterAdoption(t *testing.T, namespace string, f fluxRelease) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		hr := &kraanv1.HelmRelease{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: f.name}, hr)).To(Succeed())
		hr.Spec.Values = toJSON(g, map[string]any{"message": "upgraded by kraan-operator"})
		g.Expect(k8s.Update(ctx, hr)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		hr := expectReady(g, namespace, f.name)
		g.Expect(hr.Status.History).NotTo(BeEmpty())
		g.Expect(hr.Status.History[0].Version).To(Equal(2))
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: f.release.name}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("message", "upgraded by kraan-operator"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(suite.ApplyMethods(t, g, restConfig, namespace, f.release.name)).To(Equal(map[int]string{1: "ssa", 2: "ssa"}))
	g.Expect(configMapManagers(g, namespace, f.release.name)).To(ContainElement(helm.FieldManager + ":Apply"))
}

// TestMigration_UseHelm3Defaults_InstallsClientSide: a Flux 2.7 user who
// keeps Helm 3's behaviour with --feature-gates=UseHelm3Defaults=true gets
// new releases installed client-side, as helm-controller v1.4 did; a
// release whose spec asks for server-side apply still gets it.
func TestMigration_UseHelm3Defaults_InstallsClientSide(t *testing.T) {
	g := NewWithT(t)
	ns := suite.NewNamespace(t, k8s, "helm3-defaults")
	chartRepository(t, ns)
	startOperator(t, "--feature-gates=UseHelm3Defaults=true")
	createHelm4Release(t, ns, helm4Release{name: "app", values: map[string]any{}})
	createHelm4Release(t, ns, helm4Release{name: "asks", values: map[string]any{}, serverSideApply: ptr.To(true)})
	readyAt(t, ns, "app")
	readyAt(t, ns, "asks")

	g.Expect(suite.ApplyMethods(t, g, restConfig, ns, "app")).To(Equal(map[int]string{1: "csa"}), "the gate's default")
	managers := configMapManagers(g, ns, "app")
	g.Expect(managers).To(ContainElement(helm.FieldManager + ":Update"))
	g.Expect(managers).NotTo(ContainElement(helm.FieldManager + ":Apply"))

	g.Expect(suite.ApplyMethods(t, g, restConfig, ns, "asks")).To(Equal(map[int]string{1: "ssa"}), "install.serverSideApply: true")
	g.Expect(configMapManagers(g, ns, "asks")).To(ContainElement(helm.FieldManager + ":Apply"))
}

// chartRepository serves the small test chart and creates the
// HelmRepository "charts" in namespace.
func chartRepository(t *testing.T, namespace string) {
	t.Helper()
	repo := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
	NewWithT(t).Expect(k8s.Create(context.Background(), &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: namespace},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL, Interval: metav1.Duration{Duration: 10 * time.Minute}},
	})).To(Succeed())
}

// installLikeFlux installs r with the Helm 4 SDK as helm-controller v1.6's
// internal/action does for a HelmRelease r in namespace: release name
// [targetNamespace-]name, records in namespace, server-side apply with
// conflicts forced, take ownership, kstatus waits, its origin labels
// post-rendered onto every object, written as field manager helm-controller.
func installLikeFlux(t *testing.T, namespace string, r helm4Release) fluxRelease {
	t.Helper()
	g := NewWithT(t)
	previous := kube.ManagedFieldsManager
	kube.ManagedFieldsManager = fluxFieldManager
	defer func() { kube.ManagedFieldsManager = previous }()

	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	cfg := &action.Configuration{}
	g.Expect(cfg.Init(flags, namespace, "secret")).To(Succeed())
	ch, err := loader.Load(chartrepo.ChartDir("small"))
	g.Expect(err).NotTo(HaveOccurred())

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = r.name, namespace
	if r.targetNamespace != "" {
		install.ReleaseName, install.Namespace = r.targetNamespace+"-"+r.name, r.targetNamespace
	}
	install.ServerSideApply, install.ForceConflicts = true, true
	install.TakeOwnership, install.Devel, install.SkipCRDs = true, true, true
	install.WaitStrategy, install.WaitForJobs, install.Timeout = kube.StatusWatcherStrategy, true, 2*time.Minute
	install.PostRenderStrategy = action.PostRenderStrategyCombined
	install.PostRenderer = fluxOriginLabels{namespace: namespace, name: r.name}
	_, err = install.RunWithContext(context.Background(), ch, maps.Clone(r.values))
	g.Expect(err).NotTo(HaveOccurred(), "installing %s as Flux would", r.name)
	return fluxRelease{name: r.name, release: helmRelease{name: install.ReleaseName, storageNamespace: namespace, version: 1}}
}

// fluxOriginLabels is Flux's origin-labels post-renderer: the labels
// helm.toolkit.fluxcd.io/name and /namespace, naming the HelmRelease, on
// every object.
type fluxOriginLabels struct{ namespace, name string }

func (f fluxOriginLabels) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	out := &bytes.Buffer{}
	docs := releaseutil.SplitManifests(rendered.String())
	keys := slices.Collect(maps.Keys(docs))
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, key := range keys {
		doc := docs[key]
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			obj["metadata"] = meta
		}
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			meta["labels"] = labels
		}
		labels["helm.toolkit.fluxcd.io/name"], labels["helm.toolkit.fluxcd.io/namespace"] = f.name, f.namespace
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "---\n%s", data)
	}
	return out, nil
}

// createHelm4Release creates the kraan.io HelmRelease of r: the small chart
// from the HelmRepository "charts", r's values and target namespace.
func createHelm4Release(t *testing.T, namespace string, r helm4Release) {
	t.Helper()
	g := NewWithT(t)
	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: namespace},
		Spec: kraanv1.HelmReleaseSpec{
			Interval:        metav1.Duration{Duration: 10 * time.Minute},
			Timeout:         &metav1.Duration{Duration: 2 * time.Minute},
			TargetNamespace: r.targetNamespace,
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
				Chart: "small", Version: "0.1.0",
				SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}},
			Values: toJSON(g, r.values),
		},
	}
	if r.serverSideApply != nil {
		hr.Spec.Install = &kraanv1.Install{ServerSideApply: r.serverSideApply}
	}
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
}

func toJSON(g Gomega, values map[string]any) *apiextensionsv1.JSON {
	data, err := json.Marshal(values)
	g.Expect(err).NotTo(HaveOccurred())
	return &apiextensionsv1.JSON{Raw: data}
}

// configMapManagers are the managedFields entries of a ConfigMap.
func configMapManagers(g Gomega, namespace, name string) []string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, cm)).To(Succeed())
	return suite.FieldManagers(cm)
}

// containerRestarts are the restart counts of every pod of the namespaces,
// summed over its containers, by pod UID.
func containerRestarts(g Gomega, namespaces ...string) map[types.UID]int32 {
	out := map[types.UID]int32{}
	for _, ns := range namespaces {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(context.Background(), pods, client.InNamespace(ns))).To(Succeed())
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				out[p.UID] += c.RestartCount
			}
		}
	}
	return out
}
