package helm

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestEngine_Run_recoversInterruptedOperations: an operator killed mid-action
// leaves the newest revision pending. The engine unlocks it and completes the
// action with an upgrade, with no remediation: nothing failed, so neither a
// rollback (which would roll the workload back and forth) nor an uninstall
// (which would delete it) is right. The retried revision is not marked
// interrupted itself. test/e2e/crash kills a real operator.
func TestEngine_Run_recoversInterruptedOperations(t *testing.T) {
	env, engine := startEngine(t)
	for _, tt := range []struct {
		name      string
		namespace string
		// interrupt turns storage into what a kill leaves: the revision that
		// was pending and its status.
		interrupt func(g Gomega, cfg *action.Configuration, req Request) (int, rcommon.Status)
		want      map[int]string
	}{
		{name: "upgrade", namespace: "upgrade", interrupt: pendingUpgrade,
			want: map[int]string{1: "superseded", 2: "failed", 3: "deployed"}},
		{name: "first install", namespace: "install", interrupt: pendingInstall,
			want: map[int]string{1: "superseded", 2: "deployed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			g.Expect(env.Client.Create(ctx, namespaceObject(tt.namespace))).To(Succeed())
			req := interruptibleRequest(g, tt.namespace)
			_, err := engine.Run(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			key, before := types.NamespacedName{Namespace: tt.namespace, Name: "app"}, &appsv1.Deployment{}
			g.Expect(env.Client.Get(ctx, key, before)).To(Succeed())

			req.Desired.Values = map[string]any{"message": "two"}
			cfg, err := engine.configFor(req.Target, testLogHandler(t), nil)
			g.Expect(err).NotTo(HaveOccurred())
			pending, status := tt.interrupt(g, cfg, req)

			res, err := engine.Run(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			actions := make([]Action, 0, len(res.Taken))
			for _, s := range res.Taken {
				g.Expect(s.Err).NotTo(HaveOccurred())
				actions = append(actions, s.Action)
			}
			g.Expect(actions).To(Equal([]Action{ActionUnlock, ActionUpgrade}))
			g.Expect(res.Taken[0].Detail).To(And(ContainSubstring("revision %d", pending), ContainSubstring(status.String())))
			g.Expect(res.Next).To(Equal(ActionNone))

			stored, err := cfg.Releases.History("app")
			g.Expect(err).NotTo(HaveOccurred())
			history, err := v1Releases(stored)
			g.Expect(err).NotTo(HaveOccurred())
			statuses := map[int]string{}
			for _, rel := range history {
				statuses[rel.Version] = rel.Info.Status.String()
				if rel.Version == pending {
					g.Expect(rel.Labels).To(HaveKeyWithValue(InterruptedLabel, status.String()))
				} else {
					g.Expect(rel.Labels).NotTo(HaveKey(InterruptedLabel), "revision %d", rel.Version)
				}
			}
			g.Expect(statuses).To(Equal(tt.want))
			g.Expect(req.Desired.Matches(res.Latest)).To(BeTrue())
			after := &appsv1.Deployment{}
			g.Expect(env.Client.Get(ctx, key, after)).To(Succeed())
			g.Expect(after.UID).To(Equal(before.UID), "the Deployment was deleted and created again")
		})
	}
}

// TestEngine_Run_failureBeforeStorageIsNotCounted: an upgrade that fails
// before Helm writes a revision (here a kind the API server does not know;
// in production the API server unreachable) is retried with back-off, not
// counted against the retries: with the default of none, counting it would
// stall the release until its spec changed, as the soak found.
func TestEngine_Run_failureBeforeStorageIsNotCounted(t *testing.T) {
	g := NewWithT(t)
	env, engine := startEngine(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, namespaceObject("unknown"))).To(Succeed())
	req := interruptibleRequest(g, "unknown")
	req.Actions.Policy = Policy{} // Flux's default: no retries
	_, err := engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())

	widget := &common.File{Name: "templates/widget.yaml", Data: []byte("apiVersion: test.kraan.io/v1\nkind: Widget\nmetadata: {name: w}\n")}
	req.Desired.Chart.Templates = append(req.Desired.Chart.Templates, widget)
	req.Desired.ChartDigest = "sha256:two"
	res, err := engine.Run(ctx, req)
	g.Expect(err).To(MatchError(ContainSubstring("Widget")))
	g.Expect(res.Failures).To(Equal(Failures{}), "a failure that left storage as it was counted as a failed upgrade")
	g.Expect(res.Latest.Version).To(Equal(1))
	g.Expect(Plan(Observation{Latest: res.Latest}, req.Desired.Matches, req.Actions.Policy, res.Failures)).To(Equal(ActionUpgrade),
		"the next pass must try again, not stall")
}

// interruptibleRequest releases the small chart with no waits (envtest runs
// no controllers, so no Deployment ever becomes ready) and the uninstall
// upgrade strategy, the remediation that would hurt most.
func interruptibleRequest(g Gomega, namespace string) Request {
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	chrt, err := loader.LoadDir(filepath.Join(root, "testdata", "charts", "small"))
	g.Expect(err).NotTo(HaveOccurred())
	noWait := WaitOptions{DisableWait: true}
	return Request{
		Target:  Target{ReleaseName: "app", Namespace: namespace, StorageNamespace: namespace},
		Desired: Desired{Chart: chrt, ChartDigest: "sha256:one", Values: map[string]any{"message": "one"}},
		Actions: Actions{
			Install:   InstallOptions{WaitOptions: noWait},
			Upgrade:   UpgradeOptions{WaitOptions: noWait},
			Rollback:  RollbackOptions{WaitOptions: noWait},
			Uninstall: UninstallOptions{DisableWait: true},
			// spec.upgrade.remediation: {retries: 1, strategy: uninstall}
			Policy: Policy{UpgradeRetries: 1, UpgradeRemediateLast: true, UpgradeStrategyUninstall: true},
		},
	}
}

// pendingUpgrade is what SIGKILL during the upgrade to req's values leaves:
// a second revision, pending-upgrade, beside the deployed first.
func pendingUpgrade(g Gomega, cfg *action.Configuration, req Request) (int, rcommon.Status) {
	stored, err := cfg.Releases.Get("app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	pending, err := v1Release(stored)
	g.Expect(err).NotTo(HaveOccurred())
	pending.Version, pending.Config, pending.Labels = 2, req.Desired.Values, req.Desired.labels()
	pending.SetStatus(rcommon.StatusPendingUpgrade, "Preparing upgrade")
	g.Expect(cfg.Releases.Create(pending)).To(Succeed())
	return 2, rcommon.StatusPendingUpgrade
}

// pendingInstall is what SIGKILL during the first install leaves once Helm
// created the objects: the only revision, pending-install.
func pendingInstall(g Gomega, cfg *action.Configuration, _ Request) (int, rcommon.Status) {
	stored, err := cfg.Releases.Get("app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := v1Release(stored)
	g.Expect(err).NotTo(HaveOccurred())
	rel.SetStatus(rcommon.StatusPendingInstall, "Initial install underway")
	g.Expect(cfg.Releases.Update(rel)).To(Succeed())
	return 1, rcommon.StatusPendingInstall
}

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// startEngine starts an API server (envtest) for the test and an engine on it.
func startEngine(t *testing.T) (*testenv.Env, *Engine) {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	engine, err := NewEngine(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(engine.Close)
	return env, engine
}
