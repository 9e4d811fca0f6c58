package olm_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/localplane"
)

const (
	olmNS       = "olm"
	operatorsNS = "operators"
	pkgName     = "kraan-operator"
	// oldChannel is the channel 0.1.0 was published in; newChannel the one
	// named after the API's maturity (v1alpha1), which holds every version.
	oldChannel  = "stable"
	newChannel  = "alpha"
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

// publishCatalog points the CatalogSource at new catalog content served on
// port, as rolling out a new catalog image does: the CatalogSource is
// replaced, and the catalog operator connects to the new server.
func publishCatalog(t *testing.T, c client.Client, port int) {
	t.Helper()
	g := NewWithT(t)
	cs := &operatorsv1alpha1.CatalogSource{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: olmNS, Name: catalogName}, cs)).To(Succeed())
	g.Expect(c.Delete(t.Context(), cs)).To(Succeed())
	g.Eventually(func() error {
		return c.Get(t.Context(), client.ObjectKeyFromObject(cs), &operatorsv1alpha1.CatalogSource{})
	}).WithTimeout(time.Minute).Should(MatchError(ContainSubstring("not found")))
	createCatalogSource(t, c, port)
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
