package olm_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/testenv"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

const (
	olmNS       = "olm"
	operatorsNS = "operators"
	pkgName     = "kraan-operator"
	channel     = "stable"
	csvV1       = "kraan-operator.v0.1.0"
	csvV2       = "kraan-operator.v0.2.0"
	catalogName = "kraan-catalog"
)

// tool returns the path of a binary the Makefile exports, failing with the
// make target that builds it when the variable is unset.
func tool(t *testing.T, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which builds OLM and opm (`make olm-tools`)", env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v; run `make olm-tools`", env, path, err)
	}
	return path
}

// TestOLM_SubscriptionInstallsAndUpgrades installs the bundle in bundle/ the
// way a cluster user does — CatalogSource, OperatorGroup, Subscription with
// automatic approval — with OLM's own operators and opm serving a file-based
// catalog, then publishes a next version that replaces it and sees OLM upgrade,
// and finally runs the operator with the permissions the CSV granted.
func TestOLM_SubscriptionInstallsAndUpgrades(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	olmBin, catalogBin, opm := tool(t, "KRAAN_OLM"), tool(t, "KRAAN_OLM_CATALOG"), tool(t, "KRAAN_OPM")
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
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	work := t.TempDir()
	startOLM(t, work, olmBin, catalogBin)

	// Version 0.1.0: the bundle as `make bundle` wrote it.
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	bundles := make([]string, 0, 2)
	bundles = append(bundles, filepath.Join(root, "bundle"))
	port := serveCatalog(t, work, opm, bundles)
	createCatalogSource(t, c, port)
	g.Expect(c.Create(ctx, &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: "global-operators"},
	})).To(Succeed(), "an OperatorGroup without target namespaces: AllNamespaces")
	g.Expect(c.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorsNS, Name: pkgName},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource: catalogName, CatalogSourceNamespace: olmNS,
			Package: pkgName, Channel: channel, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
		},
	})).To(Succeed())
	expectSucceeded(t, c, csvV1)
	dep := &appsv1.Deployment{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: "kraan-controller-manager"}, dep)).To(Succeed())
	g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
	g.Expect(containerEnv(dep, "OPERATOR_CONDITION_NAME")).To(Equal(csvV1),
		"OLM tells the operator its OperatorCondition, which turns on the Upgradeable condition")

	// Version 0.2.0 replaces 0.1.0 in the same channel.
	bundles = append(bundles, nextBundle(t, work, bundles[0]))
	restartCatalog(t, c, work, opm, bundles)
	expectSucceeded(t, c, csvV2)
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: csvV1}, &operatorsv1alpha1.ClusterServiceVersion{})
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(MatchError(ContainSubstring("not found")),
		"OLM deletes the replaced CSV once the new one succeeded")
	g.Eventually(func(g Gomega) {
		sub := &operatorsv1alpha1.Subscription{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: operatorsNS, Name: pkgName}, sub)).To(Succeed())
		g.Expect(sub.Status.InstalledCSV).To(Equal(csvV2))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the Subscription records the upgrade")

	runOperatorAsCSV(t, c, work, csvV2)
}

func containerEnv(dep *appsv1.Deployment, name string) string {
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func expectSucceeded(t *testing.T, c client.Client, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		csv := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: operatorsNS, Name: name}, csv)).To(Succeed())
		g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "%s: %s", csv.Status.Reason, csv.Status.Message)
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "CSV %s", name)
}

// startOLM runs OLM's olm and catalog operators against the plane. Both bind
// fixed ports (:8080 plain, :8443 with TLS), so olm gets a certificate.
func startOLM(t *testing.T, work, olmBin, catalogBin string) {
	t.Helper()
	g := NewWithT(t)
	crt, key, err := cert.GenerateSelfSignedCertKey("localhost", nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	crtFile, keyFile := filepath.Join(work, "olm.crt"), filepath.Join(work, "olm.key")
	g.Expect(os.WriteFile(crtFile, crt, 0o600)).To(Succeed())
	g.Expect(os.WriteFile(keyFile, key, 0o600)).To(Succeed())
	env := []string{"KUBECONFIG=" + kubeconfig, "OPERATOR_NAMESPACE=" + olmNS, "OPERATOR_NAME=olm-operator"}
	startProcess(t, work, "olm", env, olmBin, "--namespace", olmNS, "--writeStatusName", "",
		"--tls-cert", crtFile, "--tls-key", keyFile)
	startProcess(t, work, "catalog", env, catalogBin, "--namespace", olmNS, "--writeStatusName", "",
		"--kubeconfig", kubeconfig, "--configmapServerImage", "none", "--opmImage", "none", "--util-image", "none")
}

// startProcess runs bin until the test ends, logging to <work>/<name>.log
// (printed when the test fails).
func startProcess(t *testing.T, work, name string, env []string, bin string, args ...string) {
	t.Helper()
	p, err := localplane.StartProcess(localplane.ProcessOptions{Name: name, Dir: work, Binary: bin, Args: args, Env: env})
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), name)
	t.Cleanup(func() {
		_ = p.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("--- %s log (tail) ---\n%s", name, p.LogTail(80))
		}
	})
}

// serveCatalog writes a file-based catalog holding bundles (in order, each
// replacing the previous one) and serves it with opm on a free port.
func serveCatalog(t *testing.T, work, opm string, bundles []string) int {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(work, fmt.Sprintf("catalog-%d", len(bundles)), pkgName)
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	index := run(t, opm, "init", pkgName, "--default-channel="+channel, "--output=yaml")
	entries := ""
	for i, b := range bundles {
		index += run(t, opm, "render", b, "--output=yaml")
		name := csvName(t, b)
		entries += "- name: " + name + "\n"
		if i > 0 {
			entries += "  replaces: " + csvName(t, bundles[i-1]) + "\n"
		}
	}
	index += fmt.Sprintf("---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n%s", pkgName, channel, entries)
	g.Expect(os.WriteFile(filepath.Join(dir, "index.yaml"), []byte(index), 0o600)).To(Succeed())
	run(t, opm, "validate", filepath.Dir(dir))
	port := freePort(t)
	startProcess(t, work, fmt.Sprintf("opm-%d", len(bundles)), nil, opm, "serve", filepath.Dir(dir),
		"--port", strconv.Itoa(port), "--pprof-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--termination-log", filepath.Join(work, fmt.Sprintf("opm-%d.termination", len(bundles))))
	return port
}

func createCatalogSource(t *testing.T, c client.Client, port int) {
	t.Helper()
	g := NewWithT(t)
	cs := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: olmNS, Name: catalogName},
		Spec: operatorsv1alpha1.CatalogSourceSpec{
			SourceType: operatorsv1alpha1.SourceTypeGrpc, Address: fmt.Sprintf("127.0.0.1:%d", port),
			DisplayName: "kraan-operator test catalog", Publisher: "kraan e2e",
		},
	}
	g.Expect(c.Create(t.Context(), cs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(cs), cs)).To(Succeed())
		g.Expect(cs.Status.GRPCConnectionState).NotTo(BeNil())
		g.Expect(cs.Status.GRPCConnectionState.LastObservedState).To(Equal("READY"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the catalog operator connects to opm serve")
}

// restartCatalog publishes new catalog content: a new opm serve and the
// CatalogSource pointed at it, as a new catalog image would be rolled out.
func restartCatalog(t *testing.T, c client.Client, work, opm string, bundles []string) {
	t.Helper()
	g := NewWithT(t)
	port := serveCatalog(t, work, opm, bundles)
	cs := &operatorsv1alpha1.CatalogSource{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: olmNS, Name: catalogName}, cs)).To(Succeed())
	g.Expect(c.Delete(t.Context(), cs)).To(Succeed())
	g.Eventually(func() error {
		return c.Get(t.Context(), client.ObjectKeyFromObject(cs), &operatorsv1alpha1.CatalogSource{})
	}).WithTimeout(time.Minute).Should(MatchError(ContainSubstring("not found")))
	createCatalogSource(t, c, port)
}

// nextBundle copies bundle to <work>/bundle-v0.2.0 as version 0.2.0 replacing csvV1.
func nextBundle(t *testing.T, work, bundle string) string {
	t.Helper()
	g := NewWithT(t)
	dst := filepath.Join(work, "bundle-v0.2.0")
	g.Expect(os.CopyFS(dst, os.DirFS(bundle))).To(Succeed())
	path := filepath.Join(dst, "manifests", pkgName+".clusterserviceversion.yaml")
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	csv := map[string]any{}
	g.Expect(yaml.Unmarshal(data, &csv)).To(Succeed())
	csv["metadata"].(map[string]any)["name"] = csvV2
	spec := csv["spec"].(map[string]any)
	spec["version"], spec["replaces"] = "0.2.0", csvV1
	data, err = yaml.Marshal(csv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return dst
}

func csvName(t *testing.T, bundle string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(bundle, "manifests", pkgName+".clusterserviceversion.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	NewWithT(t).Expect(yaml.Unmarshal(data, csv)).To(Succeed())
	return csv.Name
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, args...).Output()
	var stderr []byte
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		stderr = ee.Stderr
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%s %v: %s", bin, args, stderr)
	return string(out)
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := localplane.FreePort()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return port
}
