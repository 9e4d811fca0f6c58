package helm

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recordsOf reads the release's records through the engine's storage (the
// signing driver classifies them), by version.
func recordsOf(g Gomega, engine *Engine, req Request) map[int]*release.Release {
	cfg, err := engine.configFor(req.Target, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	stored, err := cfg.Releases.History(req.Target.ReleaseName)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return map[int]*release.Release{}
	}
	g.Expect(err).NotTo(HaveOccurred())
	history, err := v1Releases(stored)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[int]*release.Release{}
	for _, rel := range history {
		out[rel.Version] = rel
	}
	return out
}

// configMapManagers are the field managers of the release's ConfigMap and
// how they wrote it (Apply: server-side; Update: client-side).
func configMapManagers(g Gomega, c client.Client, namespace string) map[string]metav1.ManagedFieldsOperationType {
	list := &corev1.ConfigMapList{}
	g.Expect(c.List(context.Background(), list, client.InNamespace(namespace),
		client.MatchingLabels{"app.kubernetes.io/managed-by": "Helm"})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	out := map[string]metav1.ManagedFieldsOperationType{}
	for _, f := range list.Items[0].ManagedFields {
		out[f.Manager] = f.Operation
	}
	return out
}

// TestEngine_Run_applyMethods: installs apply client-side unless asked
// otherwise, as Helm 3 did; ApplyEnabled applies server-side as
// FieldManager and records it (apply_method ssa); ApplyAuto follows the
// newest record.
func TestEngine_Run_applyMethods(t *testing.T) {
	env, engine := startEngine(t)
	engine.SignRecordsWith([]byte("0123456789abcdef0123456789abcdef"))
	g := NewWithT(t)
	ctx := context.Background()
	ns := "apply-methods"
	g.Expect(env.Client.Create(ctx, namespaceObject(ns))).To(Succeed())
	req := interruptibleRequest(g, ns)
	req.Apply = ApplyMethods{Install: ApplyEnabled, Upgrade: ApplyAuto}
	_, err := engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recordsOf(g, engine, req)[1].ApplyMethod).To(Equal(string(release.ApplyMethodServerSideApply)))
	g.Expect(configMapManagers(g, env.Client, ns)).To(HaveKeyWithValue(FieldManager, metav1.ManagedFieldsOperationApply))

	req.Desired.Values, req.Desired.ChartDigest = map[string]any{"message": "two"}, "sha256:two"
	_, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	records := recordsOf(g, engine, req)
	g.Expect(records[2].ApplyMethod).To(Equal(string(release.ApplyMethodServerSideApply)), "auto follows the newest record")
	g.Expect(recordTrust(records[2])).To(Equal(RecordVerified))

	req.Apply = ApplyMethods{}
	req.Desired.Values, req.Desired.ChartDigest = map[string]any{"message": "three"}, "sha256:three"
	_, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recordsOf(g, engine, req)[3].ApplyMethod).To(Equal(string(release.ApplyMethodClientSideApply)))
	g.Expect(configMapManagers(g, env.Client, ns)).To(HaveKeyWithValue(FieldManager, metav1.ManagedFieldsOperationUpdate))
}

// TestEngine_Run_keepsTheApplyMethodOfRecordsItRewrites: a record the Helm 4
// SDK wrote with server-side apply (its CLI's default) keeps apply_method
// when the engine adopts it, and again when it unlocks it after an
// interruption; the engine's signature covers it and keeps verifying.
func TestEngine_Run_keepsTheApplyMethodOfRecordsItRewrites(t *testing.T) {
	env, engine := startEngine(t)
	engine.SignRecordsWith([]byte("0123456789abcdef0123456789abcdef"))
	g := NewWithT(t)
	ctx := context.Background()
	ns := "ssa-records"
	g.Expect(env.Client.Create(ctx, namespaceObject(ns))).To(Succeed())
	req := interruptibleRequest(g, ns)
	cfg, err := engine.configFor(req.Target, testLogHandler(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	installLikeAnotherClient(g, cfg, req, nil)
	g.Expect(recordsOf(g, engine, req)[1].ApplyMethod).To(Equal(string(release.ApplyMethodServerSideApply)), "Helm 4's default")

	res, err := engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Taken).To(BeEmpty(), "adopted, not upgraded")
	adopted := recordsOf(g, engine, req)[1]
	g.Expect(adopted.ApplyMethod).To(Equal(string(release.ApplyMethodServerSideApply)))
	g.Expect(adopted.Labels).To(HaveKey(RecordSignatureLabel))
	g.Expect(recordTrust(adopted)).To(Equal(RecordVerified))

	interruptInstall(g, engine, req)
	res, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Taken).NotTo(BeEmpty())
	g.Expect(res.Taken[0].Action).To(Equal(ActionUnlock))
	unlocked := recordsOf(g, engine, req)[1]
	g.Expect(unlocked.Labels).To(HaveKey(InterruptedLabel))
	g.Expect(unlocked.ApplyMethod).To(Equal(string(release.ApplyMethodServerSideApply)))
	g.Expect(recordTrust(unlocked)).To(Equal(RecordVerified))
}

// interruptInstall puts the first revision back to pending-install through
// the engine's storage, signed, as an operator killed mid-install leaves it.
func interruptInstall(g Gomega, engine *Engine, req Request) {
	cfg, err := engine.configFor(req.Target, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	stored, err := cfg.Releases.Get(req.Target.ReleaseName, 1)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := v1Release(stored)
	g.Expect(err).NotTo(HaveOccurred())
	rel.SetStatus(rcommon.StatusPendingInstall, "Initial install underway")
	g.Expect(cfg.Releases.Update(rel)).To(Succeed())
}
