package helm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"
)

// TestEngine_resume_waitsOnlyForObjectsTheRevisionApplied: an operator
// killed after Helm recorded a pending upgrade but before it patched the
// objects leaves them as the previous revision made them, all present.
// Resuming the wait would record as deployed what was never applied (the
// soak's ConfigMap kept its old message under a deployed revision); the
// engine must unlock and upgrade again instead. Objects that are what the
// revision says are waited for, as before.
func TestEngine_resume_waitsOnlyForObjectsTheRevisionApplied(t *testing.T) {
	g := NewWithT(t)
	env, engine := startEngine(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, namespaceObject("resume"))).To(Succeed())
	req := interruptibleRequest(g, "resume")
	_, err := engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := engine.configFor(req.Target, testLogHandler(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	stored, err := cfg.Releases.Get("app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	first, err := v1Release(stored)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Manifest).To(ContainSubstring(`message: "one"`))

	pendingOf := func(manifest string) Observation {
		stored, err := cfg.Releases.Get("app", 1)
		g.Expect(err).NotTo(HaveOccurred())
		pending, err := v1Release(stored)
		g.Expect(err).NotTo(HaveOccurred())
		pending.Version, pending.Manifest = 2, manifest
		pending.SetStatus(rcommon.StatusPendingUpgrade, "Preparing upgrade")
		return Observation{Latest: pending, PreviousDeployed: first}
	}
	// The whole wait fits in a second: the Deployment has no controller to
	// make it ready here, and only whether the wait began matters.
	how := resumption{action: ActionUpgrade, timeout: time.Second}

	notApplied := pendingOf(strings.Replace(first.Manifest, `message: "one"`, `message: "two"`, 1))
	g.Expect(cfg.Releases.Create(notApplied.Latest)).To(Succeed())
	_, err = engine.resume(ctx, cfg, req.Target, notApplied, how)
	g.Expect(errors.Is(err, errNotApplied)).To(BeTrue(), "a revision whose ConfigMap was never patched was resumed: %v", err)
	g.Expect(cfg.Releases.Delete("app", 2)).Error().NotTo(HaveOccurred())

	applied := pendingOf(first.Manifest)
	g.Expect(cfg.Releases.Create(applied.Latest)).To(Succeed())
	detail, err := engine.resume(ctx, cfg, req.Target, applied, how)
	g.Expect(errors.Is(err, errNotApplied)).To(BeFalse(), "objects the revision applied were not waited for: %v", err)
	g.Expect(detail).To(ContainSubstring("resumed the wait for revision 2"))
}
