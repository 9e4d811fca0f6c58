package migration_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// TestMigration_FromFluxHelmController installs releases with Flux
// helm-controller — a kustomize post-renderer, commonMetadata in a target
// namespace, valuesFrom, dependsOn, an OCI chart, a chart with a CRD and a
// test — and runs docs/migrating-from-flux.md's blocks as written, with
// helm-controller and kraan-operator both running: save, suspend and delete
// each Flux HelmRelease, apply its spec as a kraan.io one. kraan-operator
// must adopt every one: no uninstall, no new revision (what it would deploy
// is what Flux deployed), no Deployment re-created and no pod restarted,
// every release Ready, and still so after a second reconcile. Then it goes
// back to Flux by the page's blocks.
func TestMigration_FromFluxHelmController(t *testing.T) {
	m := installWithFlux(t, "migrate")
	doc := openGuide(t, "migrating-from-flux.md")

	// Before you start: the operator is installed beside helm-controller.
	m.handedOver = time.Now()
	startOperator(t)
	listed := doc.run(t, "Step by step", 1, 2)
	for _, o := range m.objs {
		NewWithT(t).Expect(listed).To(ContainSubstring(o.GetName()), "step 2 does not list %s", o.GetName())
	}
	// The YAML's order is dependencies first, as step 2 asks.
	for _, o := range m.objs {
		doc.sh.Set("NS", o.GetNamespace(), "NAME", o.GetName())
		doc.run(t, "Step by step", 4, 5, 6, 7, 8)
		expectStorage(t, m.flux, m.before.storage)
	}
	// Step 10: helm-controller goes.
	NewWithT(t).Expect(m.helmController.Stop(stopGrace)).To(Succeed())
	m.expectAdopted(t)

	m.goBack(t, doc)
}

// TestMigration_FromFluxHelmControllerInALayer is the same migration with
// the untouched Flux YAML (apiVersion helm.toolkit.fluxcd.io/v2) in an
// AddonsLayer's Git source: the layer converts the Flux HelmReleases to
// kraan.io ones, which adopt the releases Flux made.
func TestMigration_FromFluxHelmControllerInALayer(t *testing.T) {
	m := installWithFlux(t, "migrate-layer")
	m.handOver(t)

	m.handedOver = time.Now()
	startOperator(t)
	gitRepository(t, m.namespace, "addons", map[string]string{"flux/releases.yaml": m.yaml})
	layer := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: m.namespace},
		Spec: kraanv1.AddonsLayerSpec{
			Version: "0.1.0",
			Source: kraanv1.SourceSpec{Kind: "gitrepositories.source.toolkit.fluxcd.io", Name: "addons",
				Namespace: m.namespace, Path: "./flux"},
			Interval: metav1.Duration{Duration: time.Minute},
			Timeout:  metav1.Duration{Duration: 2 * time.Minute},
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), layer)).To(Succeed())
	// The layer's only way to the releases: the kraan.io HelmReleases it
	// converted from Flux's YAML.
	m.expectAdopted(t)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(layer), layer)).To(Succeed())
		deployed := apimeta.FindStatusCondition(layer.Status.Conditions, kraanv1.DeployedCondition)
		g.Expect(deployed).NotTo(BeNil())
		g.Expect(deployed.Status).To(Equal(metav1.ConditionTrue), deployed.Message)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestMigration_LiveFluxRelease_KraanWaits: issue #43, never two owners. The
// kraan.io HelmReleases are created while the Flux ones still run
// unsuspended (a guide step skipped, or an AddonsLayer over the same
// directory): each waits, Ready=False reason ManagedByFlux naming the Flux
// HelmRelease to suspend (or DependencyNotReady, behind a dependency that
// waits so), and Helm storage does not move. Once Flux lets go
// the releases are adopted in place.
func TestMigration_LiveFluxRelease_KraanWaits(t *testing.T) {
	m := installWithFlux(t, "two-owners")
	startOperator(t, "--requeue-dependency=2s")
	for _, o := range m.objs {
		createKraanRelease(t, o)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		for _, o := range m.objs {
			hr := &kraanv1.HelmRelease{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(o), hr)).To(Succeed())
			ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil(), "HelmRelease %s has no Ready condition", o.GetName())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), o.GetName())
			if deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn"); len(deps) > 0 {
				// Its dependency waits for Flux, so it waits for its dependency.
				g.Expect(ready.Reason).To(Equal(kraanv1.ReasonDependencyNotReady), "%s: %s", o.GetName(), ready.Message)
				continue
			}
			g.Expect(ready.Reason).To(Equal(kraanv1.ReasonManagedByFlux), "%s: %s", o.GetName(), ready.Message)
			g.Expect(ready.Message).To(ContainSubstring("Flux HelmRelease " + o.GetNamespace() + "/" + o.GetName()))
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	expectStorage(t, m.flux, m.before.storage)

	m.handedOver = time.Now()
	m.handOver(t)
	m.expectAdopted(t)
}

// migration is one run: the Flux HelmReleases and what Flux deployed.
type migration struct {
	namespace, target string
	// yaml is testdata/flux-releases.yaml for the namespaces; objs its objects.
	yaml string
	objs []*unstructured.Unstructured
	// flux is what Flux reported, before what the cluster held then.
	flux   []fluxRelease
	before state
	// start is when the run started, handedOver when kraan-operator did.
	start, handedOver time.Time
	// helmController runs until the hand-over.
	helmController *localplane.Process
}

// installWithFlux creates namespaces <prefix>-… and <prefix>-target-…, the
// chart sources, and the Flux HelmReleases, runs helm-controller until every
// one is Ready and records what Flux deployed.
func installWithFlux(t *testing.T, prefix string) *migration {
	t.Helper()
	m := newMigration(t, prefix)
	m.installWithFlux(t, func(*unstructured.Unstructured) {})
	return m
}

// newMigration creates the namespaces <prefix>-… and <prefix>-target-…
// and the chart sources, and reads the Flux HelmReleases.
func newMigration(t *testing.T, prefix string) *migration {
	t.Helper()
	m := &migration{start: time.Now(), namespace: suite.NewNamespace(t, k8s, prefix),
		target: suite.NewNamespace(t, k8s, prefix+"-target")}
	sources(t, m.namespace)
	m.yaml = fluxYAML(t, m.namespace, m.target)
	m.objs = decodeAll(t, m.yaml)
	return m
}

// installWithFlux runs helm-controller, creates the Flux HelmReleases as
// prepare leaves each (Kraan's label and owner, say) until every one is
// Ready, and records what Flux deployed.
func (m *migration) installWithFlux(t *testing.T, prepare func(*unstructured.Unstructured)) {
	t.Helper()
	m.helmController = startHelmController(t)
	for _, o := range m.objs {
		hr := o.DeepCopy()
		prepare(hr)
		NewWithT(t).Expect(k8s.Create(context.Background(), hr)).To(Succeed(), "Flux HelmRelease %s", o.GetName())
	}
	m.flux = waitFluxReady(t, m.objs)
	t.Logf("Flux helm-controller installed %d releases in %v", len(m.flux), time.Since(m.start).Round(time.Second))
	m.before = snapshot(t, m.flux, m.namespace, m.target)
	for _, f := range m.flux {
		NewWithT(t).Expect(m.before.storage[f.name].status).To(HaveKeyWithValue(f.release.version, "deployed"), "release %s", f.release)
	}
}

// handOver lets Flux go (handOver) and stops helm-controller. Deleting the
// suspended Flux HelmReleases must change nothing in Helm storage.
func (m *migration) handOver(t *testing.T) {
	t.Helper()
	handOver(t, m.objs)
	NewWithT(t).Expect(m.helmController.Stop(stopGrace)).To(Succeed())
	expectStorage(t, m.flux, m.before.storage)
}

// expectAdopted waits until kraan-operator has every release Ready, asks for
// a second reconcile, which must read the labels the first recorded, and
// checks that nothing Flux deployed changed. It logs the numbers.
func (m *migration) expectAdopted(t *testing.T) {
	t.Helper()
	for _, f := range m.flux {
		readyAt(t, m.namespace, f.name)
	}
	t.Logf("kraan-operator had every release Ready %v after it started", time.Since(m.handedOver).Round(time.Millisecond))
	for _, f := range m.flux {
		reconcileAgain(t, m.namespace, f.name)
	}
	after := snapshot(t, m.flux, m.namespace, m.target)

	adopted, moved := 0, 0
	for _, f := range m.flux {
		b, a := m.before.storage[f.name], after.storage[f.name]
		if a.latest() != b.latest() {
			moved++
			continue
		}
		if a.adopted(a.latest()) {
			adopted++
		}
	}
	restarted := restartedPods(m.before.workloads, after.workloads)
	recreated := 0
	for name, w := range m.before.workloads {
		if after.workloads[name].uid != w.uid {
			recreated++
		}
	}
	t.Logf("Releases adopted: %d of %d; revisions moved: %d; Deployments re-created: %d of %d; pods restarted: %d of %d; migration wall time %v",
		adopted, len(m.flux), moved, recreated, len(m.before.workloads), restarted, podCount(m.before.workloads), time.Since(m.start).Round(time.Second))

	g := NewWithT(t)
	for _, f := range m.flux {
		// The same revisions with the same statuses in the same Secrets:
		// nothing was uninstalled, upgraded or rolled back.
		g.Expect(after.storage[f.name].status).To(Equal(m.before.storage[f.name].status), "revisions of %s", f.release)
		g.Expect(after.storage[f.name].uids).To(Equal(m.before.storage[f.name].uids), "storage Secrets of %s", f.release)
	}
	g.Expect(after.workloads).To(HaveLen(len(m.before.workloads)))
	for name, w := range m.before.workloads {
		g.Expect(after.workloads).To(HaveKey(name))
		g.Expect(after.workloads[name].uid).To(Equal(w.uid), "Deployment %s was re-created", name)
		g.Expect(after.workloads[name].templateHash).To(Equal(w.templateHash), "the pod template of %s changed", name)
	}
	g.Expect(restarted).To(BeZero(), "pods restarted")
	g.Expect(moved).To(BeZero(), "revisions moved")
	g.Expect(adopted).To(Equal(len(m.flux)), "releases adopted")
}

// state is what the migration must not change.
type state struct {
	// storage holds the revisions of each release, by HelmRelease name.
	storage map[string]revisions
	// workloads are the Deployments of both namespaces.
	workloads map[string]workload
}

// snapshot waits until every Deployment is rolled out and reads storage and
// the workloads.
func snapshot(t *testing.T, flux []fluxRelease, namespaces ...string) state {
	t.Helper()
	var s state
	NewWithT(t).Eventually(func(g Gomega) {
		s = state{storage: map[string]revisions{}, workloads: workloads(g, namespaces...)}
		for _, f := range flux {
			s.storage[f.name] = storedRevisions(g, f.release)
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// One Deployment per release: the charts have one each.
	NewWithT(t).Expect(s.workloads).To(HaveLen(len(flux)))
	return s
}

// expectStorage checks that Helm storage holds what want says.
func expectStorage(t *testing.T, flux []fluxRelease, want map[string]revisions) {
	t.Helper()
	g := NewWithT(t)
	for _, f := range flux {
		have := storedRevisions(g, f.release)
		g.Expect(have.status).To(Equal(want[f.name].status), "revisions of %s", f.release)
		g.Expect(have.uids).To(Equal(want[f.name].uids), "storage Secrets of %s", f.release)
	}
}

func podCount(ws map[string]workload) int {
	n := 0
	for _, w := range ws {
		n += len(w.pods)
	}
	return n
}

// startOperator runs kraan-operator, built from ./cmd, with args as a
// separate process and waits until it is ready; it is stopped when the test
// ends, and a failed test prints the end of its log.
func startOperator(t *testing.T, args ...string) {
	t.Helper()
	startOperatorWithEnv(t, nil, args...)
}

// startOperatorWithEnv is startOperator with env (NAME=value) added to the
// process's environment, as a Deployment's env would.
func startOperatorWithEnv(t *testing.T, env []string, args ...string) *suite.RunningOperator {
	t.Helper()
	op, err := suite.StartOperator(t.Context(), suite.OperatorProcess{
		Name: "kraan-operator", Binary: operatorBinary, Kubeconfig: kubeconfig, Dir: t.TempDir(),
		Args: append([]string{"--log-level=debug"}, args...), Env: env,
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log("kraan-operator's log:\n" + op.LogTail(logTail))
		}
	})
	return op
}

// createKraanRelease creates the Flux HelmRelease obj as a kraan.io one:
// the same YAML, apiVersion kraan.io/v1alpha1, created with strict field
// validation as kubectl apply does, so a field the kraan.io API does not
// have fails here instead of being dropped.
func createKraanRelease(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	hr := obj.DeepCopy()
	hr.SetAPIVersion(kraanv1.GroupVersion.String())
	NewWithT(t).Expect(k8s.Create(context.Background(), hr, client.FieldValidation(metav1.FieldValidationStrict))).
		To(Succeed(), "kraan.io HelmRelease %s", hr.GetName())
}

// readyAt waits until the kraan.io HelmRelease is Ready at its generation.
func readyAt(t *testing.T, namespace, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		expectReady(g, namespace, name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// expectReady checks that the kraan.io HelmRelease is Ready at its
// generation and returns it.
func expectReady(g Gomega, namespace, name string) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, hr)).To(Succeed())
	g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation), "HelmRelease %s", name)
	ready := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil(), "HelmRelease %s has no Ready condition", name)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "HelmRelease %s: %s", name, ready.Message)
	return hr
}

// reconcileAgain asks for a reconcile as `flux reconcile hr` does and waits
// until the operator handled it and the release is still Ready.
func reconcileAgain(t *testing.T, namespace, name string) {
	t.Helper()
	token := strconv.FormatInt(time.Now().UnixNano(), 10)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		hr := &kraanv1.HelmRelease{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, hr)).To(Succeed())
		if hr.Annotations == nil {
			hr.Annotations = map[string]string{}
		}
		hr.Annotations["reconcile.fluxcd.io/requestedAt"] = token
		g.Expect(k8s.Update(context.Background(), hr)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		hr := expectReady(g, namespace, name)
		g.Expect(hr.Status.LastHandledReconcileAt).To(Equal(token), "HelmRelease %s", name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
