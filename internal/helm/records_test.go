package helm

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var testKey = []byte("a-test-key-of-enough-bytes")

// testOwner is the UID of the object the test records are signed for.
const testOwner = types.UID("0b6c3f5e-owner")

// testBinding is what the test records are read for: release app of
// namespace apps, owned by testOwner.
var testBinding = recordBinding{storageNamespace: "apps", release: "app", owner: testOwner}

func testRecord() *release.Release {
	return &release.Release{
		Name: "app", Namespace: "apps", Version: 3,
		Info: &release.Info{Status: rcommon.StatusDeployed, LastDeployed: time.Now()},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "small", Version: "0.1.0"},
			Values: map[string]any{"replicas": 2, "big": int64(1) << 40}},
		Config:   map[string]any{"image": map[string]any{"tag": "1.2"}},
		Manifest: "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		Hooks:    []*release.Hook{{Name: "pre", Kind: "Job", Manifest: "kind: Job", Events: []release.HookEvent{release.HookPreDelete}}},
		Labels:   map[string]string{ChartDigestLabel: "abc"},
	}
}

// stored is rel as Helm's Secrets driver gives it back: its JSON decoded,
// its labels from the Secret's.
func stored(t *testing.T, rel *release.Release) *release.Release {
	t.Helper()
	data, err := json.Marshal(rel)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	back := &release.Release{}
	NewWithT(t).Expect(json.Unmarshal(data, back)).To(Succeed())
	back.Labels = map[string]string{}
	for k, v := range rel.Labels {
		back.Labels[k] = v
	}
	return back
}

func TestSignRecord_verifiesAfterAStorageRoundTrip(t *testing.T) {
	g := NewWithT(t)
	rel := testRecord()
	g.Expect(SignRecord(testKey, "apps", testOwner, rel)).To(Succeed())
	sig := rel.Labels[RecordSignatureLabel]
	g.Expect(sig).To(MatchRegexp(`^2\.[0-9a-f]{8}\.[0-9a-f]{52}$`), "a valid label value")
	g.Expect(len(sig)).To(BeNumerically("<=", 63))
	g.Expect(verifyRecord(testKey, testBinding, stored(t, rel), nil).trust).To(Equal(RecordVerified))
}

func TestVerifyRecord_classifies(t *testing.T) {
	signed := testRecord()
	NewWithT(t).Expect(SignRecord(testKey, "apps", testOwner, signed)).To(Succeed())
	tests := []struct {
		name      string
		change    func(*release.Release)
		namespace string
		key       []byte
		binding   *recordBinding
		want      RecordTrust
	}{
		{name: "as signed", change: func(*release.Release) {}, want: RecordVerified},
		{name: "no signature", change: func(r *release.Release) { delete(r.Labels, RecordSignatureLabel) }, want: RecordUnverified},
		{name: "an object added to the manifest", change: func(r *release.Release) {
			r.Manifest += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n"
		}, want: RecordTampered},
		{name: "a hook added", change: func(r *release.Release) {
			r.Hooks = append(r.Hooks, &release.Hook{Name: "crb", Kind: "ClusterRoleBinding"})
		}, want: RecordTampered},
		{name: "values changed", change: func(r *release.Release) { r.Config["image"] = "evil" }, want: RecordTampered},
		{name: "version changed", change: func(r *release.Release) { r.Version = 9 }, want: RecordTampered},
		{name: "a signature made up", change: func(r *release.Release) {
			r.Labels[RecordSignatureLabel] = keyID(testKey) + ".00"
		}, want: RecordTampered},
		{name: "another key's id", change: func(r *release.Release) {
			r.Labels[RecordSignatureLabel] = "00000000.00"
		}, want: RecordUnverified},
		{name: "copied to another namespace", namespace: "other", change: func(*release.Release) {}, want: RecordTampered},
		{name: "signed with a key since replaced", key: []byte("another-key-of-enough-bytes"), change: func(*release.Release) {}, want: RecordUnverified},
		// A genuine record moved where another release reads it is never
		// this release's (issue #42): copied under another Secret name,
		// read for another release, or for another owner.
		{name: "copied under another release's Secret name", change: func(r *release.Release) {
			r.Labels[recordKeyLabel] = "sh.helm.release.v1.ops.v2"
		}, want: RecordUnverified},
		{name: "renumbered by its Secret name", change: func(r *release.Release) {
			r.Labels[recordKeyLabel] = "sh.helm.release.v1.app.v9"
		}, want: RecordUnverified},
		{name: "stored under its own Secret name", change: func(r *release.Release) {
			r.Labels[recordKeyLabel] = "sh.helm.release.v1.app.v3"
		}, want: RecordVerified},
		{name: "read for another release (a Secret labelled name=ops)", binding: &recordBinding{storageNamespace: "apps", release: "ops", owner: testOwner},
			change: func(*release.Release) {}, want: RecordUnverified},
		{name: "read for another owner", binding: &recordBinding{storageNamespace: "apps", release: "app", owner: "another-uid"},
			change: func(*release.Release) {}, want: RecordUnverified},
		{name: "its owner label changed", change: func(r *release.Release) { r.Labels[RecordOwnerLabel] = "another-uid" }, want: RecordTampered},
		{name: "renamed in its content", change: func(r *release.Release) { r.Name = "ops" }, want: RecordTampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := stored(t, signed)
			tt.change(rel)
			b, key := testBinding, testKey
			if tt.namespace != "" {
				b.storageNamespace = tt.namespace
			}
			if tt.binding != nil {
				b = *tt.binding
			}
			if tt.key != nil {
				key = tt.key
			}
			NewWithT(t).Expect(verifyRecord(key, b, rel, nil).trust).To(Equal(tt.want))
		})
	}
}

func TestSigningDriver_sign_keepsAnUntrustedRecordUntrusted(t *testing.T) {
	d := &signingDriver{key: testKey, binding: testBinding}
	tests := []struct {
		name    string
		read    RecordTrust
		wantSig bool
		want    RecordTrust
	}{
		{name: "verified is signed again", read: RecordVerified, wantSig: true, want: RecordVerified},
		{name: "unverified stays unsigned", read: RecordUnverified, want: RecordUnverified},
		{name: "tampered keeps its bad signature", read: RecordTampered, wantSig: true, want: RecordTampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rel := testRecord()
			if tt.read != RecordUnverified {
				rel.Labels[RecordSignatureLabel] = keyID(testKey) + ".0123"
			}
			d.classify(rel)
			rel.Labels[recordTrustLabel] = string(tt.read)
			rel.Info.Status = rcommon.StatusSuperseded // a status update
			g.Expect(d.sign(rel)).To(Succeed())
			g.Expect(recordTrust(rel)).To(Equal(tt.read), "the verdict stays in memory")
			back := stored(t, rel)
			delete(back.Labels, recordTrustLabel) // what the Secret holds
			g.Expect(back.Labels[RecordSignatureLabel] != "").To(Equal(tt.wantSig))
			g.Expect(verifyRecord(testKey, testBinding, back, nil).trust).To(Equal(tt.want))
		})
	}
}

func TestSigningDriver_Create_signsANewRevisionCopiedFromAnUnverifiedOne(t *testing.T) {
	g := NewWithT(t)
	d := &signingDriver{Driver: driver.NewMemory(), key: testKey, binding: testBinding}
	rel := testRecord()
	// Helm's upgrade copies the previous revision's labels, the verdict too.
	rel.Labels[recordTrustLabel] = string(RecordUnverified)
	g.Expect(d.Create("sh.helm.release.v1.app.v3", rel)).To(Succeed())
	got, err := d.Get("sh.helm.release.v1.app.v3")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recordTrust(got.(*release.Release))).To(Equal(RecordVerified))
	g.Expect(verifyRecord(testKey, testBinding, stored(t, rel), nil).trust).To(Equal(RecordVerified))
}

func TestWrittenOutside_reportsWhoAndWhenNeverContent(t *testing.T) {
	g := NewWithT(t)
	rel := testRecord()
	rel.Info.Description = "Upgrade complete"
	rel.Labels[recordTrustLabel] = string(RecordTampered)
	rel.Labels[recordWriterLabel], rel.Labels[recordWrittenAtLabel] = "helm", "2026-12-05T10:00:00Z"
	out := revisionOf(WrittenOutside(rel), Desired{})
	g.Expect(out).NotTo(BeNil())
	report := out.OutsideReport()
	g.Expect(report).To(ContainSubstring("revision 3 (deployed) of release apps/app was written outside the operator"))
	g.Expect(report).To(ContainSubstring(`by helm, at 2026-12-05T10:00:00Z, Helm says "Upgrade complete"`))
	g.Expect(report).NotTo(ContainSubstring("ConfigMap"), "never the record's content")
	rel.Info.Status, rel.Info.Description = rcommon.StatusFailed, `Secret "db" is invalid: data.password: "hunter2"`
	g.Expect(revisionOf(WrittenOutside(rel), Desired{}).OutsideReport()).NotTo(ContainSubstring("hunter2"),
		"a failed revision's description quotes rendered objects")
	for _, trust := range []RecordTrust{RecordUnverified, RecordVerified} {
		rel.Labels[recordTrustLabel] = string(trust)
		g.Expect(WrittenOutside(rel)).To(BeNil(), "a %s record is not reported", trust)
	}
}

func TestLastWriter_isTheNewestManager(t *testing.T) {
	g := NewWithT(t)
	at := func(s string) *metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		g.Expect(err).NotTo(HaveOccurred())
		return &metav1.Time{Time: tm}
	}
	manager, when := lastWriter([]metav1.ManagedFieldsEntry{
		{Manager: "kraan-operator", Time: at("2026-12-05T09:00:00Z")},
		{Manager: "kubectl-edit", Time: at("2026-12-05T11:00:00Z")},
		{Manager: "helm", Time: at("2026-12-05T10:00:00Z")},
	})
	g.Expect(manager).To(Equal("kubectl-edit"))
	g.Expect(when).To(Equal("2026-12-05T11:00:00Z"))
	manager, when = lastWriter(nil)
	g.Expect(manager + when).To(BeEmpty())
}

func TestRefuseUnverified(t *testing.T) {
	g := NewWithT(t)
	rel := testRecord()
	g.Expect(refuseUnverified(rel, "rolling back to")).To(Succeed(), "a release made in memory is the engine's")
	rel.Labels[recordTrustLabel] = string(RecordVerified)
	g.Expect(refuseUnverified(rel, "rolling back to")).To(Succeed())
	rel.Labels[recordTrustLabel] = string(RecordUnverified)
	g.Expect(refuseUnverified(rel, "rolling back to")).To(MatchError(errUnverifiedRecord))
}

func TestReleaseOwner_owns(t *testing.T) {
	owner := releaseOwner{name: "app", namespace: "apps"}
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{name: "this release's", annotations: map[string]string{ReleaseNameAnnotation: "app", ReleaseNamespaceAnnotation: "apps"}, want: true},
		{name: "none", want: false},
		{name: "another release of the namespace", annotations: map[string]string{ReleaseNameAnnotation: "db", ReleaseNamespaceAnnotation: "apps"}},
		{name: "a release of that name elsewhere", annotations: map[string]string{ReleaseNameAnnotation: "app", ReleaseNamespaceAnnotation: "kube-system"}},
		{name: "the name only", annotations: map[string]string{ReleaseNameAnnotation: "app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Annotations: tt.annotations}
			NewWithT(t).Expect(owner.owns(obj)).To(Equal(tt.want))
		})
	}
}

func TestCorrectable(t *testing.T) {
	owner := releaseOwner{name: "app", namespace: "apps"}
	owned := &unstructured.Unstructured{}
	owned.SetAnnotations(map[string]string{ReleaseNameAnnotation: "app", ReleaseNamespaceAnnotation: "apps"})
	handMade := &unstructured.Unstructured{}
	tests := []struct {
		name  string
		trust RecordTrust
		diff  *jsondiff.Diff
		want  bool
	}{
		{name: "owned object of a verified record", trust: RecordVerified, diff: &jsondiff.Diff{Type: jsondiff.DiffTypeUpdate, ClusterObject: owned}, want: true},
		{name: "missing object of a verified record", trust: RecordVerified, diff: &jsondiff.Diff{Type: jsondiff.DiffTypeCreate}, want: true},
		{name: "hand-made object", trust: RecordVerified, diff: &jsondiff.Diff{Type: jsondiff.DiffTypeUpdate, ClusterObject: handMade}},
		{name: "missing object of an unverified record", trust: RecordUnverified, diff: &jsondiff.Diff{Type: jsondiff.DiffTypeCreate}},
		{name: "owned object of an unverified record", trust: RecordUnverified, diff: &jsondiff.Diff{Type: jsondiff.DiffTypeUpdate, ClusterObject: owned}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(correctable(&Revision{Trust: tt.trust}, owner, tt.diff)).To(Equal(tt.want))
		})
	}
}

func TestUnownedHook(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{name: "a hook an earlier version created", annotations: map[string]string{hookAnnotation: "pre-upgrade"}, want: true},
		{name: "a hook of a release", annotations: map[string]string{hookAnnotation: "pre-upgrade", ReleaseNameAnnotation: "other"}},
		{name: "a hand-made object", annotations: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(unownedHook(&metav1.ObjectMeta{Annotations: tt.annotations})).To(Equal(tt.want))
		})
	}
}

// BenchmarkVerifyRecord: what verifying one read costs for a record of a
// chart with 50 templates of 2 KiB each and their rendered manifest.
func BenchmarkVerifyRecord(b *testing.B) {
	rel := testRecord()
	tmpl := strings.Repeat("x", 2048)
	for i := range 50 {
		rel.Chart.Templates = append(rel.Chart.Templates, &common.File{Name: fmt.Sprintf("templates/t%d.yaml", i), Data: []byte(tmpl)})
		rel.Manifest += "---\n" + tmpl + "\n"
	}
	if err := SignRecord(testKey, "apps", testOwner, rel); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if verifyRecord(testKey, testBinding, rel, nil).trust != RecordVerified {
			b.Fatal("not verified")
		}
	}
}

// helm3Record is a release record as Helm 3 stored it: its times as strings,
// empty ones included, and no field Helm 4 added (apply_method, modtime).
const helm3Record = `{"name":"app","info":{"first_deployed":"2026-11-02T10:00:00.123456789Z","last_deployed":"2026-11-02T10:00:00.123456789Z","deleted":"","description":"Install complete","status":"deployed"},"chart":{"metadata":{"name":"small","version":"0.1.0","apiVersion":"v2"},"lock":null,"templates":[{"name":"templates/configmap.yaml","data":"YQ=="}],"values":{"message":"one"},"schema":null,"files":null},"config":{"message":"one"},"manifest":"---\n# Source: small/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n","hooks":[{"name":"app-test","kind":"Pod","path":"small/templates/test.yaml","manifest":"apiVersion: v1\nkind: Pod\n","events":["test"],"last_run":{"started_at":"","completed_at":"","phase":""}}],"version":1,"namespace":"helm3"}`

// storeRecordSecret writes record as Helm's Secrets driver stores it (gzip,
// base64), with the release labels and signature sig.
func storeRecordSecret(g Gomega, c client.Client, namespace, record, sig string) {
	storeRecordSecretAs(g, c, namespace, "app", 1, record, map[string]string{RecordSignatureLabel: sig})
}

// storeRecordSecretAs writes record as Helm's Secrets driver stores revision
// version of release name: a Secret of that name, with that release's
// labels and extra, whatever record says it is.
func storeRecordSecretAs(g Gomega, c client.Client, namespace, name string, version int, record string, extra map[string]string) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write([]byte(record))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.Close()).To(Succeed())
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version),
			Labels: map[string]string{"owner": "helm", "name": name, "status": "deployed", "version": fmt.Sprint(version)}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
	maps.Copy(secret.Labels, extra)
	g.Expect(c.Create(context.Background(), secret)).To(Succeed())
}

// TestEngine_verifiesRecordsSignedUnderHelm3: the operator signed records
// over Helm 3's encoding; Helm 4 decodes them into types that encode
// differently, so the signature is checked against the stored bytes. Such a
// record stays verified, and one changed since is still found tampered.
func TestEngine_verifiesRecordsSignedUnderHelm3(t *testing.T) {
	env, engine := startEngine(t)
	engine.SignRecordsWith(testKey)
	g := NewWithT(t)
	for ns, want := range map[string]RecordTrust{"helm3": RecordVerified, "helm3-edited": RecordTampered} {
		g.Expect(env.Client.Create(context.Background(), namespaceObject(ns))).To(Succeed())
		sig := legacySignature(testKey, ns, []byte(helm3Record))
		record := helm3Record
		if want == RecordTampered {
			record = strings.Replace(record, "name: app", "name: kube-proxy", 1)
		}
		storeRecordSecret(g, env.Client, ns, record, sig)
		req := Request{Target: Target{ReleaseName: "app", Namespace: ns, StorageNamespace: ns}}
		rel := recordsOf(g, engine, req)[1]
		g.Expect(rel).NotTo(BeNil())
		g.Expect(recordTrust(rel)).To(Equal(want), ns)
	}
}

// signedRecordJSON is testRecord as release name revision version, signed
// for owner in namespace, as stored: its JSON and its labels.
func signedRecordJSON(g Gomega, namespace, name string, version int, owner types.UID) (string, map[string]string) {
	rel := testRecord()
	rel.Name, rel.Namespace, rel.Version = name, namespace, version
	g.Expect(SignRecord(testKey, namespace, owner, rel)).To(Succeed())
	canonical, err := canonicalRecord(rel)
	g.Expect(err).NotTo(HaveOccurred())
	return string(canonical), map[string]string{RecordSignatureLabel: rel.Labels[RecordSignatureLabel], RecordOwnerLabel: string(owner)}
}

// TestEngine_aRecordCopiedUnderAnotherReleaseNeverVerifies: issue #42's
// escalation. A tenant copies a genuinely signed record of its own release
// (with a pre-delete hook binding cluster-admin) under the name and labels
// of a platform release that keeps its history in the tenant's namespace.
// Read for the platform release, it is never verified, so none of its hooks
// run with the platform's identity; a record renamed inside (its content
// made to say it is the platform's) is tampered.
func TestEngine_aRecordCopiedUnderAnotherReleaseNeverVerifies(t *testing.T) {
	env, engine := startEngine(t)
	engine.SignRecordsWith(testKey)
	g := NewWithT(t)
	ns := "team-a"
	g.Expect(env.Client.Create(context.Background(), namespaceObject(ns))).To(Succeed())
	const tenantOwner, platformOwner = types.UID("tenant-hr-uid"), types.UID("platform-hr-uid")

	// The tenant's own record, verified for the tenant's release.
	record, labels := signedRecordJSON(g, ns, "team", 1, tenantOwner)
	storeRecordSecretAs(g, env.Client, ns, "team", 1, record, labels)
	tenant := Request{Target: Target{ReleaseName: "team", Namespace: ns, StorageNamespace: ns, Owner: tenantOwner}}
	g.Expect(recordTrust(recordsOf(g, engine, tenant)[1])).To(Equal(RecordVerified))

	// Copied as revision 2 of the platform's release "ops".
	storeRecordSecretAs(g, env.Client, ns, "ops", 2, record, labels)
	platform := Request{Target: Target{ReleaseName: "ops", Namespace: ns, StorageNamespace: ns, Owner: platformOwner}}
	g.Expect(recordsOf(g, engine, platform)).To(BeEmpty(),
		"Helm finds the copy by its labels, but it is not a record of the platform's release: it is never read as one")
	cfg, err := engine.configFor(platform.Target, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cfg.Releases.Get("ops", 2)
	g.Expect(err).To(MatchError(driver.ErrReleaseNotFound), "nor read by its key")

	// Renamed and renumbered inside too: the signature no longer holds.
	renamed := strings.Replace(strings.Replace(record, `"name":"team"`, `"name":"ops"`, 1), `"version":1`, `"version":3`, 1)
	storeRecordSecretAs(g, env.Client, ns, "ops", 3, renamed, labels)
	g.Expect(recordTrust(recordsOf(g, engine, platform)[3])).To(Equal(RecordTampered))

	// The tenant's release made anew (another UID) does not replay the
	// records of the object it replaced either.
	tenant.Target.Owner = "tenant-hr-uid-2"
	g.Expect(recordTrust(recordsOf(g, engine, tenant)[1])).To(Equal(RecordUnverified))
}

// TestEngine_migratesRecordsSignedBeforeTheBinding: a record an earlier
// operator signed (scheme 1: storage namespace and content) stays verified
// after the upgrade, and is signed again in place for its release and the
// first owner to read it; a copy of it under another release's name never
// verifies.
func TestEngine_migratesRecordsSignedBeforeTheBinding(t *testing.T) {
	env, engine := startEngine(t)
	engine.SignRecordsWith(testKey)
	g := NewWithT(t)
	ns := "upgraded"
	g.Expect(env.Client.Create(context.Background(), namespaceObject(ns))).To(Succeed())
	rel := testRecord()
	rel.Namespace, rel.Version = ns, 1
	canonical, err := canonicalRecord(rel)
	g.Expect(err).NotTo(HaveOccurred())
	legacy := map[string]string{RecordSignatureLabel: legacySignature(testKey, ns, canonical)}
	storeRecordSecretAs(g, env.Client, ns, "app", 1, string(canonical), legacy)
	storeRecordSecretAs(g, env.Client, ns, "ops", 1, string(canonical), legacy)

	owner := types.UID("app-uid")
	req := Request{Target: Target{ReleaseName: "app", Namespace: ns, StorageNamespace: ns, Owner: owner}}
	g.Expect(recordTrust(recordsOf(g, engine, req)[1])).To(Equal(RecordVerified))
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sh.helm.release.v1.app.v1"}, secret)).To(Succeed())
	g.Expect(secret.Labels[RecordSignatureLabel]).To(HavePrefix("2."), "signed again in place")
	g.Expect(secret.Labels[RecordOwnerLabel]).To(Equal(string(owner)))
	g.Expect(secret.Labels).NotTo(HaveKey(recordKeyLabel), "the in-memory label is never stored")
	g.Expect(recordTrust(recordsOf(g, engine, req)[1])).To(Equal(RecordVerified), "and verified with the new scheme")

	req.Target.Owner = "another-uid"
	g.Expect(recordTrust(recordsOf(g, engine, req)[1])).To(Equal(RecordUnverified), "bound to its owner now")

	ops := Request{Target: Target{ReleaseName: "ops", Namespace: ns, StorageNamespace: ns, Owner: "ops-uid"}}
	g.Expect(recordsOf(g, engine, ops)).To(BeEmpty(), "a scheme 1 copy under another name is no record of that release")
}

// A record over the bound is refused before it is encoded or written (issue
// #42, item 4): a chart that decompresses to a lot is not encoded into every
// revision. The error names the flag that raises it.
func TestSigningDriver_Create_refusesARecordOverTheBound(t *testing.T) {
	g := NewWithT(t)
	memory := driver.NewMemory()
	rel := testRecord()
	rel.Chart.Templates = []*common.File{{Name: "templates/big.yaml", Data: make([]byte, 2<<20)}}
	size := recordSize(rel)
	g.Expect(size).To(BeNumerically(">", 2<<20))

	d := &signingDriver{Driver: memory, key: testKey, binding: testBinding, maxBytes: 1 << 20}
	err := d.Create("sh.helm.release.v1.app.v3", rel)
	tooLarge := &RecordTooLargeError{}
	g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "%v", err)
	g.Expect(tooLarge.Size).To(Equal(size))
	g.Expect(err.Error()).To(And(ContainSubstring("apps/app"), ContainSubstring(FlagMaxRecordSize)))
	_, err = memory.Get("sh.helm.release.v1.app.v3")
	g.Expect(err).To(MatchError(driver.ErrReleaseNotFound), "nothing was written")

	d.maxBytes = size
	g.Expect(d.Create("sh.helm.release.v1.app.v3", rel)).To(Succeed(), "a record at the bound is written")
}
