package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestRun_WithoutFlux_EveryObjectSaysSo: issue #44. Most clusters that
// install the operator from OperatorHub have no Flux. A HelmRelease whose
// chart is in an OCI registry (Flux v1.7's chart.kind OCIRepository) is
// installed all the same; a HelmRelease whose chart comes from a
// HelmRepository, and an AddonsLayer reading a GitRepository, each say within
// seconds that the kind is not installed, naming it and what provides it,
// while /readyz stays ok; once Flux's CRDs are installed they go on without a
// restart (here: to wait for the sources, which nobody created).
func TestRun_WithoutFlux_EveryObjectSaysSo(t *testing.T) {
	g := NewWithT(t)
	env, kubeconfig := startEnv(t)
	probeAddr := freeAddr(t)
	ctx := context.Background()
	// run starts once per process (controller names are process-wide, and
	// TestRun_ServesProbesMetricsAndLeaseThenShutsDown has it): this one
	// runs in a process of its own, this test binary re-executed.
	operator := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess_RunOperator$")
	operator.Env = append(os.Environ(), helperArgsEnv+"="+strings.Join([]string{"--kubeconfig", kubeconfig,
		"--health-probe-bind-address", probeAddr, "--metrics-bind-address", "0", "--log-level", "error",
		"--release-record-key-namespace", "default", "--data-path", t.TempDir(), "--requeue-dependency", "2s",
		"--platform-namespaces", "default"}, "\n"))
	operator.Stdout, operator.Stderr = os.Stderr, os.Stderr
	g.Expect(operator.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = operator.Process.Signal(syscall.SIGTERM)
		_ = operator.Wait()
	})
	g.Eventually(httpStatus(probeAddr, "/readyz")).WithTimeout(30 * time.Second).Should(Equal(200))

	hr := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec: kraanv1.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{Chart: "small",
				SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"}}}},
	}
	layer := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: "base"},
		Spec: kraanv1.AddonsLayerSpec{Version: "0.1.0", Interval: metav1.Duration{Duration: time.Hour},
			Source: kraanv1.SourceSpec{Name: "addons", Namespace: "default", Path: "./base"}},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	g.Expect(env.Client.Create(ctx, layer)).To(Succeed())
	readyOf := func(obj client.Object, conditions func() []metav1.Condition) func(Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			ready := apimeta.FindStatusCondition(conditions(), kraanv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil(), "%s has no Ready condition", obj.GetName())
			return ready
		}
	}
	hrReady := readyOf(hr, func() []metav1.Condition { return hr.Status.Conditions })
	layerReady := readyOf(layer, func() []metav1.Condition { return layer.Status.Conditions })
	g.Eventually(func(g Gomega) {
		for what, ready := range map[string]*metav1.Condition{"HelmRepository": hrReady(g), "GitRepository": layerReady(g)} {
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(kraanv1.ReasonSourceKindNotInstalled), ready.Message)
			g.Expect(ready.Message).To(And(ContainSubstring(what), ContainSubstring("source-controller")))
		}
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(httpStatus(probeAddr, "/readyz")()).To(Equal(200))

	// No Flux needed for a chart in an OCI registry: the newest version
	// the range allows, by semver over the registry's tags, then the tag
	// the spec names next.
	registry := chartrepo.NewOCIRegistry(t)
	registry.Push(chartrepo.ChartDir("small"), "0.1.0", "0.1.1", "0.2.0", "0.3.0")
	fromOCI := &kraanv1.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "from-oci"},
		Spec: kraanv1.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			// envtest runs no controllers: nothing would become Ready.
			Install: &kraanv1.Install{ActionOptions: kraanv1.ActionOptions{DisableWait: true}},
			Upgrade: &kraanv1.Upgrade{ActionOptions: kraanv1.ActionOptions{DisableWait: true}},
			Chart: &kraanv1.HelmChartTemplate{Kind: kraanv1.ChartKindOCIRepository, Spec: kraanv1.HelmChartTemplateSpec{
				URL: registry.URL() + "/small", Ref: &kraanv1.OCIRepositoryRef{SemVer: "<0.2.0"}, Insecure: true}}},
	}
	g.Expect(env.Client.Create(ctx, fromOCI)).To(Succeed())
	ociReady := readyOf(fromOCI, func() []metav1.Condition { return fromOCI.Status.Conditions })
	installed := func(version string) func(Gomega) {
		return func(g Gomega) {
			ready := ociReady(g)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			g.Expect(fromOCI.Status.ObservedGeneration).To(Equal(fromOCI.Generation))
			g.Expect(fromOCI.Status.LastAttemptedRevision).To(Equal(version))
		}
	}
	g.Eventually(installed("0.1.1")).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fromOCI), fromOCI)).To(Succeed())
	fromOCI.Spec.Chart.Spec.Ref = &kraanv1.OCIRepositoryRef{Tag: "0.2.0"}
	g.Expect(env.Client.Update(ctx, fromOCI)).To(Succeed())
	g.Eventually(installed("0.2.0")).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fromOCI), fromOCI)).To(Succeed())
	fromOCI.Spec.Chart.Spec.Ref = &kraanv1.OCIRepositoryRef{SemVer: ">0.2.0"}
	g.Expect(env.Client.Update(ctx, fromOCI)).To(Succeed())
	g.Eventually(installed("0.3.0")).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	// Deleting it uninstalls the release: Helm's records go.
	g.Expect(env.Client.Delete(ctx, fromOCI)).To(Succeed())
	g.Eventually(func(g Gomega) {
		records := &corev1.SecretList{}
		g.Expect(env.Client.List(ctx, records, client.InNamespace("default"),
			client.MatchingLabels{"owner": "helm", "name": "from-oci"})).To(Succeed())
		g.Expect(records.Items).To(BeEmpty())
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(fromOCI), fromOCI))).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), "uninstalled without Flux")

	g.Expect(testenv.InstallCRDs(env.Config)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, ready := range []*metav1.Condition{hrReady(g), layerReady(g)} {
			g.Expect(ready.Reason).NotTo(Equal(kraanv1.ReasonSourceKindNotInstalled), ready.Message)
			g.Expect(ready.Message).To(ContainSubstring("not found"))
		}
	}).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), "the objects go on once Flux's CRDs are there")
}

// helperArgsEnv carries the arguments of the operator run by
// TestHelperProcess_RunOperator, one per line.
const helperArgsEnv = "KRAAN_TEST_OPERATOR_ARGS"

// TestHelperProcess_RunOperator is not a test: re-executed by a test with
// helperArgsEnv set, it runs the operator until SIGTERM and exits with its
// code. Without the variable it does nothing.
func TestHelperProcess_RunOperator(*testing.T) {
	args := os.Getenv(helperArgsEnv)
	if args == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := run(ctx, strings.Split(args, "\n"), os.Stderr)
	stop()
	os.Exit(code)
}
