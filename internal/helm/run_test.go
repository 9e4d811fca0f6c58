package helm

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/testenv"
)

// TestEngine_Run_retriesAnInterruptedUpgrade: an operator killed mid-upgrade
// leaves the newest revision pending-upgrade. The engine unlocks it and
// upgrades again, with no remediation: nothing failed, so neither a rollback
// (which would roll the workload back and forth) nor, with the uninstall
// strategy, an uninstall (which would delete it). The retried revision is
// not marked interrupted itself. test/e2e/crash kills a real operator.
func TestEngine_Run_retriesAnInterruptedUpgrade(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	engine, err := NewEngine(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	chrt, err := loader.LoadDir(filepath.Join(root, "testdata", "charts", "small"))
	g.Expect(err).NotTo(HaveOccurred())

	// envtest runs no controllers, so no Deployment ever becomes ready.
	noWait := kraanv1.ActionOptions{DisableWait: true}
	spec := &kraanv1.HelmReleaseSpec{
		Install: &kraanv1.Install{ActionOptions: noWait},
		Upgrade: &kraanv1.Upgrade{ActionOptions: noWait, Remediation: &kraanv1.UpgradeRemediation{
			Retries: 1, Strategy: kraanv1.UninstallRemediation,
		}},
		Rollback:  &kraanv1.Rollback{ActionOptions: noWait},
		Uninstall: &kraanv1.Uninstall{DisableWait: true},
	}
	req := Request{
		Target:  Target{ReleaseName: "app", Namespace: "default", StorageNamespace: "default"},
		Desired: Desired{Chart: chrt, ChartDigest: "sha256:one", Values: map[string]any{"message": "one"}},
		Spec:    spec,
	}
	ctx := context.Background()
	_, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	key, before := client.ObjectKey{Namespace: "default", Name: "app"}, &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, key, before)).To(Succeed())

	// What SIGKILL during the upgrade to "two" leaves in storage.
	req.Desired = Desired{Chart: chrt, ChartDigest: "sha256:one", Values: map[string]any{"message": "two"}}
	cfg, err := engine.configFor(req.Target, t.Logf)
	g.Expect(err).NotTo(HaveOccurred())
	pending, err := cfg.Releases.Get("app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	pending.Version, pending.Config, pending.Labels = 2, req.Desired.Values, req.Desired.labels()
	pending.SetStatus(release.StatusPendingUpgrade, "Preparing upgrade")
	g.Expect(cfg.Releases.Create(pending)).To(Succeed())

	res, err := engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	actions := make([]Action, 0, len(res.Steps))
	for _, s := range res.Steps {
		g.Expect(s.Err).NotTo(HaveOccurred())
		actions = append(actions, s.Action)
	}
	g.Expect(actions).To(Equal([]Action{ActionUnlock, ActionUpgrade}))
	g.Expect(res.Steps[0].Detail).To(And(ContainSubstring("revision 2"), ContainSubstring("pending-upgrade")))
	g.Expect(res.Next).To(Equal(ActionNone))

	history, err := cfg.Releases.History("app")
	g.Expect(err).NotTo(HaveOccurred())
	statuses := map[int]string{}
	for _, rel := range history {
		statuses[rel.Version] = rel.Info.Status.String()
		if rel.Version == 2 {
			g.Expect(rel.Labels).To(HaveKeyWithValue(InterruptedLabel, "pending-upgrade"))
		} else {
			g.Expect(rel.Labels).NotTo(HaveKey(InterruptedLabel), "revision %d", rel.Version)
		}
	}
	g.Expect(statuses).To(Equal(map[int]string{1: "superseded", 2: "failed", 3: "deployed"}))
	g.Expect(req.Desired.Matches(res.Latest)).To(BeTrue())
	after := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, key, after)).To(Succeed())
	g.Expect(after.UID).To(Equal(before.UID), "the Deployment was deleted and created again")
}
