package helm

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestEngine_Run_revisionWrittenOutside: issue #43, break-glass Helm. An
// admin's helm upgrade (or rollback, or Flux helm-controller) writes the
// next revision with the labels of the operator's revision before it, its
// signature too, which does not verify for the new content. The engine
// reports the revision, replays nothing from it and upgrades the release
// back to its spec with a signed revision of its own; a revision that
// deploys exactly the spec (a rollback to it) is adopted, with no new one.
// test/e2e/uninstall runs the real helm CLI.
func TestEngine_Run_revisionWrittenOutside(t *testing.T) {
	env, engine := startEngine(t)
	engine.SignRecordsWith(testKey)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "breakglass"
	g.Expect(env.Client.Create(ctx, namespaceObject(ns))).To(Succeed())
	req := interruptibleRequest(g, ns)
	req.Target.Owner = types.UID("hr-uid")
	res, err := engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.WrittenOutside).To(BeNil())
	g.Expect(recordTrust(recordsOf(g, engine, req)[1])).To(Equal(RecordVerified))

	clients, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	helmCLI := driver.NewSecrets(clients.CoreV1().Secrets(ns))
	// helm upgrade --reuse-values --set message=admin: revision 2, the
	// labels of revision 1 copied.
	writeOutside(g, helmCLI, 1, func(rel *release.Release) {
		rel.Config = map[string]any{"message": "admin"}
		rel.Manifest += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-proxy\n  namespace: kube-system\n"
		rel.Info.Description = "Upgrade complete"
	})

	res, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.WrittenOutside).NotTo(BeNil())
	g.Expect(res.WrittenOutside.Version).To(Equal(2))
	g.Expect(res.WrittenOutside.WrittenBy).NotTo(BeEmpty(), "the Secret's field manager names the writer")
	g.Expect(res.WrittenOutside.OutsideReport()).To(ContainSubstring(`Helm says "Upgrade complete"`))
	g.Expect(actionsOf(res)).To(Equal([]Action{ActionUpgrade}), "back to the spec with a revision of the operator's own")
	records := recordsOf(g, engine, req)
	g.Expect(records).To(HaveLen(3))
	g.Expect(recordTrust(records[2])).To(Equal(RecordTampered))
	g.Expect(recordTrust(records[3])).To(Equal(RecordVerified))
	g.Expect(req.Desired.Matches(records[3])).To(BeTrue())
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("message", "one"))

	// helm rollback 3: revision 4 deploys what revision 3 did, which is the
	// spec. Adopted: signed for the release, no new revision.
	writeOutside(g, helmCLI, 3, func(rel *release.Release) { rel.Info.Description = "Rollback to 3" })
	res, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.WrittenOutside).NotTo(BeNil())
	g.Expect(res.WrittenOutside.Version).To(Equal(4))
	g.Expect(res.Taken).To(BeEmpty(), "a revision that deploys the spec is adopted")
	records = recordsOf(g, engine, req)
	g.Expect(records).To(HaveLen(4))
	g.Expect(recordTrust(records[4])).To(Equal(RecordVerified))

	// Read again, nothing is reported any more.
	res, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.WrittenOutside).To(BeNil())
	g.Expect(res.Taken).To(BeEmpty())
}

// writeOutside writes, as the Helm CLI does through a driver with no key,
// the revision after from: from's record and labels (Helm copies them),
// changed by edit, deployed, from superseded.
func writeOutside(g Gomega, d driver.Driver, from int, edit func(*release.Release)) {
	stored, err := d.Get(makeKey("app", from))
	g.Expect(err).NotTo(HaveOccurred())
	previous, err := v1Release(stored)
	g.Expect(err).NotTo(HaveOccurred())
	copied := *previous
	copied.Info = &release.Info{Status: rcommon.StatusDeployed, FirstDeployed: previous.Info.FirstDeployed,
		LastDeployed: previous.Info.LastDeployed}
	copied.Version = latestVersion(g, d) + 1
	edit(&copied)
	g.Expect(d.Create(makeKey("app", copied.Version), &copied)).To(Succeed())
	previous.SetStatus(rcommon.StatusSuperseded, "Superseded")
	g.Expect(d.Update(makeKey("app", previous.Version), previous)).To(Succeed())
}

func latestVersion(g Gomega, d driver.Driver) int {
	rels, err := d.Query(map[string]string{"name": "app", "owner": "helm"})
	g.Expect(err).NotTo(HaveOccurred())
	latest := 0
	for _, r := range rels {
		rel, err := v1Release(r)
		g.Expect(err).NotTo(HaveOccurred())
		latest = max(latest, rel.Version)
	}
	return latest
}

func makeKey(name string, version int) string {
	return claimedKey(&release.Release{Name: name, Version: version})
}

func actionsOf(res Result) []Action {
	actions := make([]Action, 0, len(res.Taken))
	for _, s := range res.Taken {
		actions = append(actions, s.Action)
	}
	return actions
}
