package uninstall_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/env"
)

// breakGlassNamespace is the operator's namespace in TestBreakGlassHelm:
// a platform namespace, whose releases act as the operator.
const breakGlassNamespace = "breakglass"

// TestBreakGlassHelm: issue #43, item 1. An admin runs the Helm 4 CLI (built
// from the module the operator uses) on a release the operator manages,
// started with the CSV's own arguments. Each revision the CLI writes copies
// the operator's signature label, which does not verify: the operator says
// the revision was written outside it (by Helm), replays nothing from it and
// brings the release back to its spec with a revision of its own; while the
// HelmRelease is suspended the admin's fix stands; a rollback to what the
// spec deploys is adopted without a new revision; after helm uninstall the
// release is installed again. The HelmRelease never stalls.
func TestBreakGlassHelm(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	helmCLI := newHelmCLI(t)
	g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: breakGlassNamespace}})).To(Succeed())
	startCSVOperator(t)
	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: breakGlassNamespace, Name: "app"},
		Spec: kraanv1.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{Chart: "small", Version: "0.1.0",
				SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: env.HelmRepositoryName, Namespace: env.FluxNamespace}}},
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"message":"from the spec"}`)},
		},
	}
	g.Expect(k8s.Create(ctx, hr)).To(Succeed())
	t.Cleanup(func() { deleteAndWait(t, hr) })
	reconcileReady(t)
	g.Expect(releaseRevisions(g)).To(Equal([]string{"1=deployed"}))

	t.Run("a failed helm upgrade is replaced by the operator's own revision", func(t *testing.T) {
		g := NewWithT(t)
		// Server-side apply conflicts with the operator's field manager:
		// Helm writes a failed revision 2.
		out, err := helmCLI("upgrade", "app", chartrepo.ChartDir("small"), "--reuse-values", "--set", "message=admin")
		g.Expect(err).To(HaveOccurred(), out)
		g.Expect(releaseRevisions(g)).To(Equal([]string{"1=deployed", "2=failed"}))
		reconcileReady(t)
		g.Expect(releaseRevisions(g)).To(Equal([]string{"1=superseded", "2=failed", "3=deployed"}))
		g.Expect(outsideReports(g)).To(ContainElement(And(
			ContainSubstring("revision 2 (failed) of release breakglass/app was written outside the operator"),
			ContainSubstring("by Helm"))))
		g.Expect(message(g)).To(Equal("from the spec"))
	})

	t.Run("a forced helm upgrade stands while the HelmRelease is suspended", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(kraan(t, "suspend", "helmrelease", "-n", breakGlassNamespace, "app").code).To(Equal(plugin.ExitOK))
		out, err := helmCLI("upgrade", "app", chartrepo.ChartDir("small"), "--reuse-values", "--set", "message=admin", "--force-conflicts")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(message(g)).To(Equal("admin"))
		annotate(g, map[string]string{"reconcile.fluxcd.io/requestedAt": strconv.FormatInt(time.Now().UnixNano(), 10)})
		g.Consistently(func(g Gomega) {
			g.Expect(message(g)).To(Equal("admin"))
			g.Expect(releaseRevisions(g)).To(HaveLen(4))
		}).WithTimeout(10*time.Second).WithPolling(poll).Should(Succeed(), "a suspended release is left as the admin fixed it")

		g.Expect(kraan(t, "resume", "helmrelease", "-n", breakGlassNamespace, "app").code).To(Equal(plugin.ExitOK))
		reconcileReady(t)
		g.Expect(releaseRevisions(g)).To(HaveLen(5))
		g.Expect(releaseRevisions(g)[4]).To(Equal("5=deployed"))
		g.Expect(message(g)).To(Equal("from the spec"))
		g.Expect(outsideReports(g)).To(ContainElement(ContainSubstring("revision 4 (deployed)")))
	})

	t.Run("a helm rollback to what the spec deploys is adopted", func(t *testing.T) {
		g := NewWithT(t)
		out, err := helmCLI("rollback", "app", "3")
		g.Expect(err).NotTo(HaveOccurred(), out)
		reconcileReady(t)
		revisions := releaseRevisions(g)
		g.Expect(revisions).To(HaveLen(6), "no new revision")
		g.Expect(revisions[5]).To(Equal("6=deployed"))
		g.Expect(outsideReports(g)).To(ContainElement(ContainSubstring("revision 6 (deployed)")))
		current := &kraanv1.HelmRelease{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(hr), current)).To(Succeed())
		g.Expect(current.Status.History).NotTo(BeEmpty())
		g.Expect(current.Status.History[0].Version).To(BeEquivalentTo(6))
	})

	t.Run("after helm uninstall the release is installed again", func(t *testing.T) {
		g := NewWithT(t)
		out, err := helmCLI("uninstall", "app")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(releaseRevisions(g)).To(BeEmpty())
		reconcileReady(t)
		g.Expect(releaseRevisions(g)).To(Equal([]string{"1=deployed"}))
		g.Expect(message(g)).To(Equal("from the spec"))
	})

	current := &kraanv1.HelmRelease{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(hr), current)).To(Succeed())
	for _, c := range current.Status.Conditions {
		g.Expect(c.Type).NotTo(Equal(kraanv1.StalledCondition), "the release never stalls")
	}
}

// newHelmCLI returns a function running the Helm 4 CLI ($KRAAN_HELM_CLI,
// built by make from the operator's own module, its Helm version) as the
// cluster admin in breakGlassNamespace, with Helm's own files in a
// temporary directory.
func newHelmCLI(t *testing.T) func(args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	bin := os.Getenv("KRAAN_HELM_CLI")
	NewWithT(t).Expect(bin).NotTo(BeEmpty(), "KRAAN_HELM_CLI is not set: run the tests with `make test`, which builds the Helm CLI and sets it")
	return func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), bin, append(args, "--namespace", breakGlassNamespace, "--kubeconfig", kubeconfig)...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
		out, err := cmd.CombinedOutput()
		t.Logf("helm %s:\n%s", strings.Join(args, " "), out)
		return string(out), err
	}
}

// startCSVOperator runs the operator with the CSV's arguments, its
// namespace breakGlassNamespace, until the test ends.
func startCSVOperator(t *testing.T) {
	t.Helper()
	args := append(suite.CSVArgs(t), "--leader-election-namespace="+breakGlassNamespace)
	op, err := suite.StartOperator(t.Context(), suite.OperatorProcess{
		Name: "breakglass", Binary: operatorBinary, Kubeconfig: kubeconfig, Dir: filepath.Join(workDir, "breakglass"),
		Args: args, Env: []string{"RUNTIME_NAMESPACE=" + breakGlassNamespace}, Lockdown: true,
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(op.LogTail(80))
		}
	})
}

// reconcileReady asks for a reconcile of the HelmRelease, as an admin would
// after a break-glass command, and waits until it is Ready.
func reconcileReady(t *testing.T) {
	t.Helper()
	r := kraan(t, "reconcile", "helmrelease", "-n", breakGlassNamespace, "app")
	NewWithT(t).Expect(r.code).To(Equal(plugin.ExitOK), r.stdout+r.stderr)
}

// deleteAndWait deletes obj and waits until the operator let it go.
func deleteAndWait(t *testing.T, obj client.Object) {
	g := NewWithT(t)
	g.Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), obj))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the operator let %s go", obj.GetName())
}

// releaseRevisions are "version=status" of every record of release app,
// oldest first.
func releaseRevisions(g Gomega) []string {
	secrets := &corev1.SecretList{}
	g.Expect(k8s.List(context.Background(), secrets, client.InNamespace(breakGlassNamespace),
		client.MatchingLabels{"owner": "helm", "name": "app"})).To(Succeed())
	type revision struct {
		version int
		status  string
	}
	revisions := make([]revision, 0, len(secrets.Items))
	for _, s := range secrets.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		g.Expect(err).NotTo(HaveOccurred())
		revisions = append(revisions, revision{v, s.Labels["status"]})
	}
	slices.SortFunc(revisions, func(a, b revision) int { return a.version - b.version })
	out := make([]string, 0, len(revisions))
	for _, r := range revisions {
		out = append(out, fmt.Sprintf("%d=%s", r.version, r.status))
	}
	return out
}

// outsideReports are the messages of the HelmRelease's ReleaseWrittenOutside events.
func outsideReports(g Gomega) []string {
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(breakGlassNamespace))).To(Succeed())
	var messages []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "HelmRelease" && e.Reason == kraanv1.ReasonReleaseWrittenOutside {
			messages = append(messages, e.Message)
		}
	}
	return messages
}

// message is what the release's ConfigMap says.
func message(g Gomega) string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: breakGlassNamespace, Name: "app"}, cm)).To(Succeed())
	return cm.Data["message"]
}

// annotate merges annotations into the HelmRelease's.
func annotate(g Gomega, annotations map[string]string) {
	hr := &kraanv1.HelmRelease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: breakGlassNamespace, Name: "app"}, hr)).To(Succeed())
	patch := client.MergeFrom(hr.DeepCopy())
	if hr.Annotations == nil {
		hr.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		hr.Annotations[k] = v
	}
	g.Expect(k8s.Patch(context.Background(), hr, patch)).To(Succeed())
}
