package olm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestOLM_WithoutFlux_OperatorHubInstall: issue #44, an OperatorHub cluster
// as most are — OLM and no Flux CRD at all. CatalogSource → Subscription →
// the operator of this tree's bundle, running with the CSV's arguments and
// permissions; a HelmRelease of a chart in an OCI registry (Flux v1.7's
// chart.kind OCIRepository) becomes Ready; every example of the CSV, created
// as a user copies it from the console, becomes Ready or says exactly what
// it waits for.
func TestOLM_WithoutFlux_OperatorHubInstall(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	olmBin, catalogBin, opm := tool(t, "KRAAN_OLM"), tool(t, "KRAAN_OLM_CATALOG"), tool(t, "KRAAN_OPM")
	c := setUpOLMWithoutFlux(t)
	expectNoFluxCRD(t, c)
	work := t.TempDir()
	startOLM(t, work, olmBin, catalogBin)
	bin, err := suite.BuildOperator(ctx, work)
	g.Expect(err).NotTo(HaveOccurred())
	createCatalogSource(t, c, serveCatalogDocs(t, work, opm, "hub", committedCatalog(t)))
	t.Cleanup(func() { uninstallFromOLM(t, c) })
	g.Expect(c.Create(ctx, &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: "global-operators"},
	})).To(Succeed())
	g.Expect(c.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: pkgName},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource: catalogName, CatalogSourceNamespace: olmNS, Package: pkgName, Channel: newChannel,
			StartingCSV: csvV2, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
		},
	})).To(Succeed())
	expectSucceeded(t, c, csvV2)
	runOperatorPod(t, c, work, bin, csvV2)

	// A chart in an OCI registry: no Flux object anywhere.
	registry := chartrepo.NewOCIRegistry(t)
	registry.Push(chartrepo.ChartDir("small"), "0.1.0")
	ns := suite.NewNamespace(t, c, "hub")
	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-oci"},
		Spec: kraanv1.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			Chart: &kraanv1.HelmChartTemplate{Kind: kraanv1.ChartKindOCIRepository, Spec: kraanv1.HelmChartTemplateSpec{
				URL: registry.URL() + "/small", Ref: &kraanv1.OCIRepositoryRef{Tag: "0.1.0"}, Insecure: true}}},
	}
	g.Expect(c.Create(ctx, hr)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(t, c, hr) }) // while the operator runs
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "the OCI chart installs without Flux")

	// The CSV's examples, each in its own namespace where it has one.
	examples := almExamples(t, c)
	g.Expect(examples).NotTo(BeEmpty())
	for _, ex := range examples {
		if ex.GetKind() == "FleetCluster" {
			// A cluster registers only in a namespace the platform owns:
			// the one OLM installed the operator in.
			ex.SetNamespace(operatorsNS)
		}
		if ex.GetNamespace() != "" {
			err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ex.GetNamespace()}})
			g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
		}
		g.Expect(c.Create(ctx, ex)).To(Succeed(), "%s %s", ex.GetKind(), ex.GetName())
		t.Cleanup(func() { deleteAndWait(t, c, ex) })
	}
	for _, ex := range examples {
		var ready map[string]any
		g.Eventually(func(g Gomega) {
			live := ex.DeepCopy()
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ex), live)).To(Succeed())
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			for _, cond := range conds {
				if m, _ := cond.(map[string]any); m["type"] == kraanv1.ReadyCondition {
					ready = m
				}
			}
			g.Expect(ready).NotTo(BeNil(), "%s %s has no Ready condition", ex.GetKind(), ex.GetName())
			g.Expect(ready["message"]).NotTo(BeEmpty())
			if ready["status"] == string(metav1.ConditionTrue) {
				return
			}
			// Not Ready: it must say what it waits for, in words a user
			// can act on.
			g.Expect(ready["reason"]).To(BeElementOf(kraanv1.ReasonSourceKindNotInstalled, kraanv1.ReasonArtifactFailed, kraanv1.ReasonKubeConfigError),
				"%s %s: %v", ex.GetKind(), ex.GetName(), ready["message"])
			switch ready["reason"] {
			case kraanv1.ReasonSourceKindNotInstalled:
				g.Expect(ready["message"]).To(ContainSubstring("source-controller"))
			case kraanv1.ReasonKubeConfigError:
				// The example's cluster: its kubeconfig Secret is the
				// user's to create.
				name, _, _ := unstructured.NestedString(ex.Object, "spec", "kubeConfig", "secretRef", "name")
				g.Expect(ready["message"]).To(ContainSubstring("Secret " + operatorsNS + "/" + name + " does not exist"))
			default:
				// The example's registry, unreachable from this machine.
				g.Expect(ready["message"]).To(ContainSubstring("ghcr.io"))
			}
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		t.Logf("example %s %s: Ready=%v %v: %v", ex.GetKind(), ex.GetName(), ready["status"], ready["reason"], ready["message"])
	}
}

// expectNoFluxCRD removes Flux's source CRDs an earlier test of the package
// installed, and waits until the cluster serves none.
func expectNoFluxCRD(t *testing.T, c client.Client) {
	t.Helper()
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	NewWithT(t).Expect(c.List(t.Context(), list)).To(Succeed())
	for i := range list.Items {
		if strings.HasSuffix(list.Items[i].Name, ".toolkit.fluxcd.io") {
			deleteAndWait(t, c, &list.Items[i])
		}
	}
}

// almExamples are the objects of the installed CSV's alm-examples.
func almExamples(t *testing.T, c client.Client) []*unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: operatorsNS, Name: csvV2}, csv)).To(Succeed())
	var items []map[string]any
	g.Expect(json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &items)).To(Succeed())
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		out = append(out, &unstructured.Unstructured{Object: item})
	}
	return out
}

// uninstallFromOLM removes what the test installed through OLM, and the
// operator's CRDs, so that the package's next test installs from scratch.
func uninstallFromOLM(t *testing.T, c client.Client) {
	t.Helper()
	for _, obj := range []client.Object{
		&operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: pkgName}},
		&operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: csvV2}},
		&operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: "global-operators"}},
		&operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: olmNS, Name: catalogName}},
	} {
		deleteAndWait(t, c, obj)
	}
	for _, name := range testenv.OperatorCRDNames(t) {
		deleteAndWait(t, c, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
}

// deleteAndWait deletes obj and waits until it is gone.
func deleteAndWait(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(Succeed())
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "%T %s is still there", obj, obj.GetName())
}
