package olm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/olm"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/env"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// upgradeSize is how many chained layers of how many HelmReleases the
// upgrade test deploys: KRAAN_OLM_UPGRADE_SIZE=<layers>x<releases>, by
// default the 4x10, which takes about 1.5 minutes (docs/olm.md).
type upgradeSize struct{ layers, releases int }

const defaultUpgradeSize = "4x10"

func upgradeSizeFromEnv(t *testing.T) upgradeSize {
	t.Helper()
	s := os.Getenv("KRAAN_OLM_UPGRADE_SIZE")
	if s == "" {
		s = defaultUpgradeSize
	}
	l, r, ok := strings.Cut(s, "x")
	layers, err1 := strconv.Atoi(l)
	releases, err2 := strconv.Atoi(r)
	if !ok || err1 != nil || err2 != nil || layers < 1 || releases < 1 {
		t.Fatalf("KRAAN_OLM_UPGRADE_SIZE=%q: want <layers>x<releases>, e.g. 4x10", s)
	}
	return upgradeSize{layers, releases}
}

// The namespaces of the workload, and the Subscription's flag.
const (
	habitatNS      = "olm-habitat"
	blockerLayer   = "olm-blocker"
	concurrencyEnv = "KRAAN_CONCURRENT"
)

func layerName(i int) string { return fmt.Sprintf("olm-l%d", i+1) }

// TestOLM_UpgradeLeavesReleasesAlone does what a cluster user does, with
// OLM's own operators and opm serving the committed catalog: a Subscription
// to the channel 0.1.0 was published in (stable) installs 0.1.0, with an
// operator flag in spec.config.env; chained AddonsLayers of HelmReleases and
// a Habitat are Deployed by it; a layer that cannot finish keeps the
// operator's OperatorCondition Upgradeable=False. Then the catalog with 0.2.0
// (replaces 0.1.0) is published: OLM must hold the upgrade while Upgradeable
// is False, and carry it out once the layer is held. After the upgrade the
// new operator has reconciled every release, and not one Helm revision was
// added, no pod was recreated or restarted, and every layer stayed Deployed.
//
// Each version runs its own binary (issue #43, item 5): 0.1.0 the operator
// built from the commit it was released from (Helm 3 engine, its own
// flags), 0.2.0 this tree's. kwok's pods run nothing, so the test runs the
// operator process the Deployment's pod template describes, and replaces it
// when OLM changes the template (runOperatorPod). After the upgrade, the
// next revision of a release is signed by the new operator.
func TestOLM_UpgradeLeavesReleasesAlone(t *testing.T) {
	began := time.Now()
	g := NewWithT(t)
	ctx := t.Context()
	size := upgradeSizeFromEnv(t)
	olmBin, catalogBin, opm := tool(t, "KRAAN_OLM"), tool(t, "KRAAN_OLM_CATALOG"), tool(t, "KRAAN_OPM")
	scBin := tool(t, "KRAAN_SOURCE_CONTROLLER")
	c := setUpOLM(t)
	work := t.TempDir()
	startOLM(t, work, olmBin, catalogBin)
	sources := startSources(t, work, scBin)
	bin, err := suite.BuildOperator(ctx, work)
	g.Expect(err).NotTo(HaveOccurred())
	released, err := suite.BuildReleasedOperator(ctx, work, "0.1.0")
	g.Expect(err).NotTo(HaveOccurred())

	// 0.1.0, as published in the stable channel, with a flag set the only
	// way OLM allows: the Subscription's spec.config.env.
	docs := committedCatalog(t)
	createCatalogSource(t, c, serveCatalogDocs(t, work, opm, "v0.1.0", releasedCatalog(t, docs, csvV1, oldChannel)))
	g.Expect(c.Create(ctx, &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: "global-operators"},
	})).To(Succeed(), "an OperatorGroup without target namespaces: AllNamespaces")
	g.Expect(c.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: pkgName},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource: catalogName, CatalogSourceNamespace: olmNS,
			Package: pkgName, Channel: oldChannel, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
			Config: &operatorsv1alpha1.SubscriptionConfig{Env: []corev1.EnvVar{{Name: concurrencyEnv, Value: "6"}}},
		},
	})).To(Succeed())
	expectSucceeded(t, c, csvV1)
	// OLM adds spec.config to the Deployment once the Subscription records
	// the CSV as installed.
	g.Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: deploymentName}, dep)).To(Succeed())
		g.Expect(containerEnv(dep, concurrencyEnv)).To(Equal("6"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "OLM passes the Subscription's spec.config.env to the operator")
	// 0.1.0 reads no KRAAN_* variable: OLM passes it, the old binary
	// ignores it.
	op := runOperatorPod(t, c, work, released, csvV1)
	installed := time.Since(began)

	// The workload, deployed by 0.1.0.
	deployWorkload(t, c, sources, size)
	deployed := time.Since(began)
	before := observe(t, c, size)
	t.Logf("Deployed by %s: %d layers, %d Helm releases (%d revisions), %d pods", csvV1,
		len(before.layers), len(before.revisions), before.totalRevisions(), len(before.pods))

	// A layer that cannot finish: OLM must not upgrade the operator under it.
	createBlocker(t, c)
	expectUpgradeable(t, c, csvV1, metav1.ConditionFalse, olm.ReasonLayersInProgress)

	// 0.2.0 is published: the committed catalog.
	publishCatalog(t, c, serveCatalogDocs(t, work, opm, "v0.2.0", docs))
	expectUpgradeHeld(t, c)
	t.Logf("OLM holds %s Pending (%s) while Upgradeable is False", csvV2, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	held := time.Now()

	// Holding the layer ends its rollout: Upgradeable turns True and OLM
	// upgrades; the test then replaces the operator's process as the
	// Deployment's rollout replaces its pod.
	setHold(t, c, blockerLayer)
	expectSucceeded(t, c, csvV2)
	upgraded := time.Since(held)
	g.Expect(op.Stop()).To(Succeed())
	op = runOperatorPod(t, c, work, bin, csvV2)
	g.Expect(op.Log()).To(MatchRegexp(`Flags set from the environment.*%s`, concurrencyEnv), "the operator takes its flag from the environment")
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: csvV1}, &operatorsv1alpha1.ClusterServiceVersion{})
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(MatchError(ContainSubstring("not found")),
		"OLM deletes the replaced CSV once the new one succeeded")
	expectSubscription(t, c, csvV2)
	expectUpgradeable(t, c, csvV2, metav1.ConditionTrue, olm.ReasonNoLayerInProgress)

	// The new operator has handled every release, and changed nothing.
	requestReconcileAll(t, c)
	after := observe(t, c, size)
	added, recreated, restarted := before.diff(after)
	t.Logf("OLM upgrade %s → %s of %d layers × %d HelmReleases and a Habitat: revisions added %d, pods recreated %d, pods restarted %d",
		csvV1, csvV2, size.layers, size.releases, added, len(recreated), restarted)
	t.Logf("revisions added %d, pods restarted %d", added, restarted)
	t.Logf("Timings: 0.1.0 installed and its operator ready at %v, workload Deployed at %v, upgrade done %v after Upgradeable=True, whole test %v",
		installed.Round(time.Second), deployed.Round(time.Second), upgraded.Round(time.Second), time.Since(began).Round(time.Second))
	g.Expect(added).To(BeZero(), "Helm revisions added by the upgrade")
	g.Expect(recreated).To(BeEmpty(), "pods recreated by the upgrade")
	g.Expect(restarted).To(BeZero(), "container restarts during the upgrade")
	g.Expect(after.layers).To(Equal(before.layers), "every layer stayed Deployed at its version and revision")

	expectNextRevisionSigned(t, c, after.revisions[habitatNS+"/redis"])

	// Users of the deprecated channel are told, and can move to alpha,
	// which holds the same versions: nothing is reinstalled.
	switchChannel(t, c)
}

// setUpOLM installs OLM's CRDs and Flux's source CRDs (the operator's come
// with the bundle) and creates OLM's namespaces; it returns an admin client
// knowing OLM's kinds.
func setUpOLM(t *testing.T) client.Client {
	t.Helper()
	c := setUpOLMWithoutFlux(t)
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{tool(t, "KRAAN_SOURCE_CRDS")}, ErrorIfPathMissing: true})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// setUpOLMWithoutFlux installs OLM's CRDs and creates OLM's namespaces, as
// on a cluster where OLM is all there is (an earlier test may have done so).
func setUpOLMWithoutFlux(t *testing.T) client.Client {
	t.Helper()
	g := NewWithT(t)
	g.Expect(operatorsv1alpha1.AddToScheme(testenv.Scheme)).To(Succeed())
	g.Expect(operatorsv1.AddToScheme(testenv.Scheme)).To(Succeed())
	g.Expect(operatorsv2.AddToScheme(testenv.Scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		crds.CatalogSource(), crds.ClusterServiceVersion(), crds.InstallPlan(), crds.OperatorGroup(),
		crds.Operator(), crds.Subscription(), crds.OperatorCondition(), crds.OLMConfig(),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{olmNS, operatorsNS} {
		err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
	return c
}

// startSources starts a Git server, a Helm repository serving the small
// chart and Flux source-controller (test/env).
func startSources(t *testing.T, work, scBin string) *env.Sources {
	t.Helper()
	g := NewWithT(t)
	s, err := env.StartSources(t.Context(), env.SourcesOptions{
		Dir: filepath.Join(work, "sources"), SourceController: scBin, Kubeconfig: kubeconfig, Client: k8s,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = s.Stop() })
	g.Expect(s.AddChart(chartrepo.ChartDir("small"), "0.1.0")).To(Succeed())
	return s
}

// deployWorkload commits the layers' directories — a Namespace and Flux
// HelmReleases of the small chart each — creates the chained layers and the
// Habitat, and waits until all are Deployed and Ready.
func deployWorkload(t *testing.T, c client.Client, sources *env.Sources, size upgradeSize) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "layers")
	for l := range size.layers {
		files := map[string]string{"namespace.yaml": namespaceYAML(layerName(l))}
		for r := range size.releases {
			files[fmt.Sprintf("rel-%d.yaml", r)] = fluxReleaseYAML(layerName(l), fmt.Sprintf("rel-%d", r))
		}
		writeFiles(t, filepath.Join(dir, "addons", layerName(l)), files)
	}
	writeFiles(t, filepath.Join(dir, "addons", blockerLayer), map[string]string{
		"namespace.yaml": namespaceYAML(blockerLayer), "stuck.yaml": stuckDeploymentYAML(blockerLayer),
	})
	commitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := sources.Commit(commitCtx, "layers", map[string]string{".": dir})
	g.Expect(err).NotTo(HaveOccurred())
	for l := size.layers - 1; l >= 0; l-- { // dependents first: they wait
		layer := newLayer(layerName(l))
		if l > 0 {
			layer.Spec.Prereqs.DependsOn = []string{layerName(l-1) + "@0.1.0"}
		}
		g.Expect(c.Create(ctx, layer)).To(Succeed())
	}
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: habitatNS}})).To(Succeed())
	g.Expect(c.Create(ctx, &habitatv1.Habitat{
		ObjectMeta: metav1.ObjectMeta{Namespace: habitatNS, Name: "redis"},
		Spec: habitatv1.HabitatSpec{Image: "habitat/redis:0", Count: 1,
			Service: habitatv1.ServiceSpec{Name: "redis", Topology: habitatv1.TopologyStandalone}},
	})).To(Succeed())

	g.Eventually(func(g Gomega) {
		for l := range size.layers {
			layer := &kraanv1.AddonsLayer{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: layerName(l)}, layer)).To(Succeed())
			g.Expect(layer.Status.State).To(Equal(kraanv1.DeployedState), "layer %s: %s", layer.Name, readyMessage(layer.Status.Conditions))
		}
		hab := &habitatv1.Habitat{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: habitatNS, Name: "redis"}, hab)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(hab.Status.Conditions, kraanv1.ReadyCondition)).To(BeTrue(),
			"Habitat: %s", readyMessage(hab.Status.Conditions))
	}).WithTimeout(10*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the workload is Deployed by 0.1.0")
}

// expectNextRevisionSigned changes the Habitat, whose release 0.1.0 wrote,
// and waits for the new operator's next revision of it: deployed, and
// carrying the operator's record signature.
func expectNextRevisionSigned(t *testing.T, c client.Client, latest int) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	g.Eventually(func(g Gomega) {
		hab := &habitatv1.Habitat{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: habitatNS, Name: "redis"}, hab)).To(Succeed())
		hab.Spec.Image = "habitat/redis:1"
		g.Expect(c.Update(ctx, hab)).To(Succeed())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		record := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: habitatNS, Name: fmt.Sprintf("sh.helm.release.v1.redis.v%d", latest+1)}, record)).To(Succeed())
		g.Expect(record.Labels).To(HaveKeyWithValue("status", "deployed"))
		g.Expect(record.Labels[helm.RecordSignatureLabel]).NotTo(BeEmpty(), "the new operator signs the revisions it writes")
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

func newLayer(name string) *kraanv1.AddonsLayer {
	return &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kraanv1.AddonsLayerSpec{
			Version: "0.1.0",
			Source: kraanv1.SourceSpec{Name: env.GitRepositoryName, Namespace: env.FluxNamespace,
				Path: "./addons/" + name},
			Interval: metav1.Duration{Duration: time.Minute},
			Timeout:  metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// createBlocker creates a layer whose Deployment's pods never schedule: it
// stays Applying (until its 10 minute timeout), as a layer in the middle of
// a rollout does.
func createBlocker(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(c.Create(t.Context(), newLayer(blockerLayer))).To(Succeed())
	g.Eventually(func(g Gomega) {
		layer := &kraanv1.AddonsLayer{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Name: blockerLayer}, layer)).To(Succeed())
		g.Expect(layer.Status.State).To(Equal(kraanv1.ApplyingState))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the blocking layer is Applying")
}

func setHold(t *testing.T, c client.Client, name string) {
	t.Helper()
	layer := &kraanv1.AddonsLayer{}
	NewWithT(t).Expect(c.Get(t.Context(), client.ObjectKey{Name: name}, layer)).To(Succeed())
	patch := client.MergeFrom(layer.DeepCopy())
	layer.Spec.Hold = true
	NewWithT(t).Expect(c.Patch(t.Context(), layer, patch)).To(Succeed())
}

// expectUpgradeable waits until the Upgradeable condition of csvName's
// OperatorCondition is status for reason, both as the operator wrote it
// (spec) and as OLM, which judges upgrades by it, copied it (status, at the
// object's generation).
func expectUpgradeable(t *testing.T, c client.Client, csvName string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		oc := &operatorsv2.OperatorCondition{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: operatorsNS, Name: csvName}, oc)).To(Succeed())
		for _, conds := range [][]metav1.Condition{oc.Spec.Conditions, oc.Status.Conditions} {
			cond := meta.FindStatusCondition(conds, operatorsv2.Upgradeable)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(status))
			g.Expect(cond.Reason).To(Equal(reason))
		}
		g.Expect(meta.FindStatusCondition(oc.Status.Conditions, operatorsv2.Upgradeable).ObservedGeneration).To(Equal(oc.Generation))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "%s: Upgradeable=%s (%s)", csvName, status, reason)
}

// expectUpgradeHeld waits until OLM has created the 0.2.0 CSV and holds it
// Pending because 0.1.0 is not upgradeable, then checks for a while that it
// stays so: 0.1.0 keeps running (its CSV Replacing), its Deployment's pod
// template unchanged.
func expectUpgradeHeld(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	held := func(g Gomega) {
		csv := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: csvV2}, csv)).To(Succeed())
		g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhasePending))
		g.Expect(csv.Status.Reason).To(Equal(operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable), csv.Status.Message)
		old := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: csvV1}, old)).To(Succeed())
		// OLM marks the CSV it will replace; its operator runs on.
		g.Expect(old.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseReplacing))
		dep := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: deploymentName}, dep)).To(Succeed())
		g.Expect(containerEnv(dep, olm.ConditionNameEnv)).To(Equal(csvV1))
	}
	g.Eventually(held).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "OLM holds the upgrade")
	// OLM requeues a pending CSV every few seconds: a window of several
	// requeues shows it waits rather than being about to proceed.
	g.Consistently(held).WithTimeout(20*time.Second).WithPolling(2*time.Second).Should(Succeed(), "OLM keeps holding the upgrade")
}

func expectSubscription(t *testing.T, c client.Client, installed string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		sub := &operatorsv1alpha1.Subscription{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: operatorsNS, Name: pkgName}, sub)).To(Succeed())
		g.Expect(sub.Status.InstalledCSV).To(Equal(installed))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the Subscription records the upgrade")
}

// switchChannel checks the Subscription to the deprecated channel says so,
// moves it to the alpha channel and checks OLM neither installs nor
// replaces anything: the channels hold the same versions.
func switchChannel(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	key := client.ObjectKey{Namespace: operatorsNS, Name: pkgName}
	g.Eventually(func(g Gomega) {
		sub := &operatorsv1alpha1.Subscription{}
		g.Expect(c.Get(ctx, key, sub)).To(Succeed())
		cond := sub.Status.GetCondition(operatorsv1alpha1.SubscriptionChannelDeprecated)
		g.Expect(cond.Status).To(Equal(corev1.ConditionTrue))
		g.Expect(cond.Message).To(ContainSubstring("alpha"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the Subscription says its channel is deprecated")
	sub := &operatorsv1alpha1.Subscription{}
	g.Expect(c.Get(ctx, key, sub)).To(Succeed())
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.Channel = newChannel
	g.Expect(c.Patch(ctx, sub, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key, sub)).To(Succeed())
		g.Expect(sub.Status.GetCondition(operatorsv1alpha1.SubscriptionChannelDeprecated).Status).NotTo(Equal(corev1.ConditionTrue))
		g.Expect(sub.Status.InstalledCSV).To(Equal(csvV2))
		g.Expect(sub.Status.State).To(BeEquivalentTo(operatorsv1alpha1.SubscriptionStateAtLatest))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the Subscription follows alpha at the same version")
	csvs := &operatorsv1alpha1.ClusterServiceVersionList{}
	g.Expect(c.List(ctx, csvs, client.InNamespace(operatorsNS))).To(Succeed())
	g.Expect(csvs.Items).To(HaveLen(1))
	g.Expect(csvs.Items[0].Name).To(Equal(csvV2))
}

// requestReconcileAll asks for a reconcile of every HelmRelease of the
// workload, as `flux reconcile` does, and waits until each was handled: the
// new operator has looked at every release when it returns.
func requestReconcileAll(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	token := time.Now().Format(time.RFC3339Nano)
	hrs := &kraanv1.HelmReleaseList{}
	g.Expect(c.List(ctx, hrs)).To(Succeed())
	for i := range hrs.Items {
		hr := &hrs.Items[i]
		patch := client.MergeFrom(hr.DeepCopy())
		if hr.Annotations == nil {
			hr.Annotations = map[string]string{}
		}
		hr.Annotations[requestedAtAnnotation] = token
		g.Expect(c.Patch(ctx, hr, patch)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(c.List(ctx, hrs)).To(Succeed())
		for _, hr := range hrs.Items {
			g.Expect(hr.Status.LastHandledReconcileAt).To(Equal(token), "%s/%s", hr.Namespace, hr.Name)
			g.Expect(meta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.ReadyCondition)).To(BeTrue(), "%s/%s", hr.Namespace, hr.Name)
		}
	}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the new operator handles every HelmRelease")
}

// requestedAtAnnotation is Flux's reconcile request (`flux reconcile`).
const requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"

// observation is what the upgrade must leave alone.
type observation struct {
	// revisions is the newest Helm revision of each release, by
	// namespace/name.
	revisions map[string]int
	// pods are the restarts of each pod of the workload, by UID.
	pods map[string]int32
	// layers are each layer's state, version, revision and when its Ready
	// condition last changed.
	layers map[string]string
}

func observe(t *testing.T, c client.Client, size upgradeSize) observation {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	o := observation{revisions: map[string]int{}, pods: map[string]int32{}, layers: map[string]string{}}
	namespaces := make([]string, 0, 1+size.layers)
	namespaces = append(namespaces, habitatNS)
	for l := range size.layers {
		namespaces = append(namespaces, layerName(l))
		layer := &kraanv1.AddonsLayer{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: layerName(l)}, layer)).To(Succeed())
		ready := meta.FindStatusCondition(layer.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		o.layers[layer.Name] = fmt.Sprintf("%s %s %s Ready=%s since %s", layer.Status.State, layer.Status.Version,
			layer.Status.Revision, ready.Status, ready.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	for _, ns := range namespaces {
		records := &corev1.SecretList{}
		g.Expect(c.List(ctx, records, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
		for _, s := range records.Items {
			v, err := strconv.Atoi(s.Labels["version"])
			g.Expect(err).NotTo(HaveOccurred(), "record %s", s.Name)
			key := ns + "/" + s.Labels["name"]
			o.revisions[key] = max(o.revisions[key], v)
		}
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		for _, p := range pods.Items {
			var restarts int32
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
			o.pods[string(p.UID)] = restarts
		}
	}
	g.Expect(o.revisions).To(HaveLen(size.layers*size.releases+1), "a release per HelmRelease and one for the Habitat")
	g.Expect(len(o.pods)).To(BeNumerically(">=", size.layers*size.releases+1), "a pod per release at least")
	return o
}

func (o observation) totalRevisions() int {
	n := 0
	for _, v := range o.revisions {
		n += v
	}
	return n
}

// diff returns the revisions after added, the pods of before gone after,
// and the container restarts added.
func (o observation) diff(after observation) (added int, recreated []string, restarted int32) {
	for k, v := range after.revisions {
		added += v - o.revisions[k]
	}
	for uid, r := range o.pods {
		a, ok := after.pods[uid]
		if !ok {
			recreated = append(recreated, uid)
			continue
		}
		restarted += a - r
	}
	return added, recreated, restarted
}

func readyMessage(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, kraanv1.ReadyCondition); c != nil {
		return c.Reason + ": " + c.Message
	}
	return "no Ready condition"
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	for name, body := range files {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)).To(Succeed())
	}
}

func namespaceYAML(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

// fluxReleaseYAML is a layer's HelmRelease as Kraan users write it:
// Flux's helm.toolkit.fluxcd.io/v2, which the layer converts; every
// revision is kept (maxHistory 0) so none can hide.
func fluxReleaseYAML(namespace, name string) string {
	return mustYAML(map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2",
		"kind":       "HelmRelease",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"interval": "10m", "timeout": "2m", "maxHistory": 0,
			"chart": map[string]any{"spec": map[string]any{
				"chart": "small", "version": "0.1.0",
				"sourceRef": map[string]any{"kind": "HelmRepository", "name": env.HelmRepositoryName, "namespace": env.FluxNamespace},
			}},
			"values": map[string]any{"message": namespace + "/" + name},
		},
	})
}

// stuckDeploymentYAML is a Deployment whose pod no node accepts.
func stuckDeploymentYAML(namespace string) string {
	labels := map[string]any{"app": "stuck"}
	return mustYAML(map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "stuck", "namespace": namespace},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"nodeSelector": map[string]any{"kraan.io/no-such-node": "true"},
					"containers":   []any{map[string]any{"name": "app", "image": "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	})
}

func mustYAML(v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
