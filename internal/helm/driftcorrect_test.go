package helm

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// liveDeployment is a Deployment as the cluster returns it: scaled to 3 by
// someone else, running another image.
func liveDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "app", "namespace": "ns", "resourceVersion": "42",
			"labels": map[string]any{"app.kubernetes.io/version": "edited"}},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "pause:3.9"}}}}},
	}}
}

// driftOf is a Diff of the live Deployment whose operations are patchJSON.
func driftOf(g Gomega, patchJSON string) *jsondiff.Diff {
	desired := liveDeployment()
	desired.SetResourceVersion("")
	d := jsondiff.NewDiffForUnstructured(desired, liveDeployment(), jsondiff.DiffTypeUpdate, nil)
	g.Expect(json.Unmarshal([]byte(patchJSON), &d.Patch)).To(Succeed())
	return d
}

// TestCorrectionPatch: the patch is a resourceVersion test followed by the
// diff's operations, nothing of the manifest beyond them; an operation that
// would carry an ignored path along with its parent is refused.
func TestCorrectionPatch(t *testing.T) {
	imageAndLabel := `[{"op":"replace","path":"/metadata/labels/app.kubernetes.io~1version","value":"1.0.0"},` +
		`{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"pause:3.10"}]`
	for _, tt := range []struct {
		name    string
		patch   string
		ignored []string
		want    string
		wantErr string
	}{
		{name: "leaf operations, replicas ignored", patch: imageAndLabel, ignored: []string{"/spec/replicas"},
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` + imageAndLabel[1:]},
		{name: "an ignored path the patch does not reach", patch: `[{"op":"add","path":"/spec/paused","value":false}]`,
			ignored: []string{"/spec/replicas", "/spec/template/spec/containers/0/resources", "/no/such/path"},
			want:    `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"add","path":"/spec/paused","value":false}]`},
		{name: "a null value stays", patch: `[{"op":"replace","path":"/spec/replicas","value":null}]`,
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"replace","path":"/spec/replicas","value":null}]`},
		{name: "a replaced parent drops the ignored replicas",
			patch:   `[{"op":"replace","path":"/spec","value":{"template":{"spec":{"containers":[{"name":"app","image":"pause:3.10"}]}}}}]`,
			ignored: []string{"/spec/replicas"}, wantErr: "would change /spec/replicas, which an ignore rule covers"},
		{name: "a removed list item takes its ignored field along",
			patch:   `[{"op":"remove","path":"/spec/template/spec/containers/0"}]`,
			ignored: []string{"/spec/template/spec/containers/0/image"}, wantErr: "would change /spec/template/spec/containers/0/image"},
		{name: "an operation that does not apply", patch: `[{"op":"replace","path":"/spec/absent/deeper","value":1}]`,
			wantErr: "does not apply to the live object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			patch, err := correctionPatch(driftOf(g, tt.patch), tt.ignored)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(patch)).To(MatchJSON(tt.want))
		})
	}
}

func TestCorrectionPatch_noLiveObject(t *testing.T) {
	g := NewWithT(t)
	d := driftOf(g, `[]`)
	d.ClusterObject = nil
	_, err := correctionPatch(d, nil)
	g.Expect(err).To(HaveOccurred())
}

func TestValueAt(t *testing.T) {
	doc := liveDeployment().Object
	for _, tt := range []struct {
		pointer string
		want    any
		found   bool
	}{
		{pointer: "/spec/replicas", want: int64(3), found: true},
		{pointer: "/metadata/labels/app.kubernetes.io~1version", want: "edited", found: true},
		{pointer: "/spec/template/spec/containers/0/image", want: "pause:3.9", found: true},
		{pointer: "/spec/template/spec/containers/1/image"},
		{pointer: "/spec/template/spec/containers/-1"},
		{pointer: "/spec/template/spec/containers/first"},
		{pointer: "/spec/replicas/deeper"},
		{pointer: "/spec/paused"},
		{pointer: "spec/replicas"},
	} {
		got, found := valueAt(doc, tt.pointer)
		NewWithT(t).Expect([]any{got, found}).To(Equal([]any{tt.want, tt.found}), tt.pointer)
	}
	g := NewWithT(t)
	tilde, found := valueAt(map[string]any{"a~b": 1}, "/a~0b")
	g.Expect(found).To(BeTrue())
	g.Expect(tilde).To(Equal(1))
	whole, found := valueAt(doc, "")
	g.Expect(found).To(BeTrue())
	g.Expect(whole).To(Equal(doc))
}

// TestIgnoredPaths: an ignore rule applies to the objects its target selects
// by kind, name, namespace (regular expressions), labels and annotations, and
// to every object without a target.
func TestIgnoredPaths(t *testing.T) {
	g := NewWithT(t)
	rule := func(path string, target *jsondiff.Selector) jsondiff.IgnoreRule {
		return jsondiff.IgnoreRule{Paths: []string{path}, Selector: target}
	}
	rules, err := jsondiff.CompileIgnoreRules([]jsondiff.IgnoreRule{
		rule("/everywhere", nil),
		rule("/kind", &jsondiff.Selector{Kind: "Deployment"}),
		rule("/other-kind", &jsondiff.Selector{Kind: "StatefulSet"}),
		rule("/group", &jsondiff.Selector{Group: "apps", Version: "v1"}),
		rule("/name", &jsondiff.Selector{Name: "ap.*"}),
		rule("/other-name", &jsondiff.Selector{Name: "a"}),
		rule("/namespace", &jsondiff.Selector{Namespace: "ns"}),
		rule("/other-namespace", &jsondiff.Selector{Namespace: "kube-system"}),
		rule("/labels", &jsondiff.Selector{LabelSelector: "tier=web"}),
		rule("/other-labels", &jsondiff.Selector{LabelSelector: "tier in (db)"}),
		rule("/annotations", &jsondiff.Selector{AnnotationSelector: "scaled-by=hpa"}),
		rule("/other-annotations", &jsondiff.Selector{AnnotationSelector: "!scaled-by"}),
	})
	g.Expect(err).NotTo(HaveOccurred())
	obj := liveDeployment()
	obj.SetLabels(map[string]string{"tier": "web"})
	obj.SetAnnotations(map[string]string{"scaled-by": "hpa"})
	g.Expect(ignoredPaths(rules, obj)).To(ConsistOf("/everywhere", "/kind", "/group", "/name", "/namespace", "/labels", "/annotations"))
}

// TestWithoutSecretData: the API server's message on a Secret can quote the
// value; only its reason is kept. Other kinds keep the whole error.
func TestWithoutSecretData(t *testing.T) {
	g := NewWithT(t)
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "creds",
		field.ErrorList{field.Invalid(field.NewPath("data", "password"), "hunter2", "bad")})
	secret := &unstructured.Unstructured{}
	secret.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	err := withoutSecretData(secret, invalid)
	g.Expect(err).To(MatchError(ContainSubstring("Invalid")))
	g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	g.Expect(withoutSecretData(secret, errors.New("hunter2"))).NotTo(MatchError(ContainSubstring("hunter2")))
	g.Expect(withoutSecretData(secret, nil)).To(Succeed())
	g.Expect(withoutSecretData(liveDeployment(), invalid)).To(MatchError(invalid))
}

// driftManifest is a release's manifest: a Deployment whose replicas the
// test's rule ignores, a Secret, a ConfigMap with an ignored label, a
// ConfigMap the cluster's copy excludes from drift detection.
const driftManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: app, labels: {app.kubernetes.io/version: "1.0.0"}}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec: {containers: [{name: app, image: "pause:3.10"}]}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: from-the-chart}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, labels: {tier: web, ops.example.com/tuned: "1"}}
data: {message: from-the-chart}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: left-alone}
data: {message: from-the-chart}
`

// TestEngine_CheckDrift_correctsOnlyWhatIsNotIgnored: on a real API server,
// drift correction puts back the drifted fields no ignore rule covers and
// leaves (and does not take ownership of) the fields a rule covers, for
// rules selecting by kind and by name and labels with an escaped JSON
// pointer; it writes a Secret's real values; it leaves an object annotated
// helm.toolkit.fluxcd.io/driftDetection: disabled alone; it creates a
// deleted object again from the manifest, owned by the release.
func TestEngine_CheckDrift_correctsOnlyWhatIsNotIgnored(t *testing.T) {
	g := NewWithT(t)
	env, engine := startEngine(t)
	ctx := context.Background()
	const ns = "drift"
	g.Expect(env.Client.Create(ctx, namespaceObject(ns))).To(Succeed())
	installManifest(g, env.Client, ns, driftManifest)

	editByHand(g, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}, func(o client.Object) {
		d := o.(*appsv1.Deployment)
		d.Spec.Replicas = ptr.To[int32](3)
		d.Spec.Template.Spec.Containers[0].Image = "pause:3.9"
		d.Labels["app.kubernetes.io/version"] = "edited"
	})
	editByHand(g, env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}}, func(o client.Object) {
		o.(*corev1.Secret).Data["password"] = []byte("edited")
	})
	editByHand(g, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}, func(o client.Object) {
		o.(*corev1.ConfigMap).Data["message"] = "edited"
		o.SetLabels(map[string]string{"tier": "web", "ops.example.com/tuned": "7"})
	})
	editByHand(g, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "left-alone"}}, func(o client.Object) {
		o.SetAnnotations(map[string]string{DriftDetectionAnnotation: DriftDetectionDisabled})
		o.(*corev1.ConfigMap).Data["message"] = "edited"
	})

	rel := &Revision{Name: "app", Namespace: ns, Manifest: driftManifest, Trust: RecordVerified}
	spec := DriftOptions{Correct: true, Ignore: []jsondiff.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Selector: &jsondiff.Selector{Kind: "Deployment"}},
		{Paths: []string{"/metadata/labels/ops.example.com~1tuned"}, Selector: &jsondiff.Selector{Kind: "ConfigMap", Name: "sett.*", LabelSelector: "tier=web"}},
	}}
	target := Target{ReleaseName: "app", Namespace: ns, StorageNamespace: ns}
	report, err := engine.CheckDrift(ctx, target, rel, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Corrected).To(BeTrue())
	g.Expect(report.Drifted).To(ConsistOf(
		DriftedObject{ID: "Deployment/drift/app", Paths: []string{"/metadata/labels/app.kubernetes.io~1version", "/spec/template/spec/containers/0/image"}},
		DriftedObject{ID: "Secret/drift/creds", Paths: []string{"/data/password"}},
		DriftedObject{ID: "ConfigMap/drift/settings", Paths: []string{"/data/message"}},
	))

	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("pause:3.10"))
	g.Expect(d.Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "1.0.0"))
	g.Expect(*d.Spec.Replicas).To(Equal(int32(3)), "correcting drift reset an ignored field")
	g.Expect(managedBy(d, driftFieldOwner)).To(And(ContainSubstring(`"f:image"`), Not(ContainSubstring("f:replicas"))))
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret)).To(Succeed())
	g.Expect(string(secret.Data["password"])).To(Equal("from-the-chart"), "the Secret was corrected with a masked value")
	settings := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, settings)).To(Succeed())
	g.Expect(settings.Data).To(HaveKeyWithValue("message", "from-the-chart"))
	g.Expect(settings.Labels).To(HaveKeyWithValue("ops.example.com/tuned", "7"))
	g.Expect(configMap(g, env.Client, ns, "left-alone")).To(HaveKeyWithValue("message", "edited"))

	report, err = engine.CheckDrift(ctx, target, rel, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Drifted).To(BeEmpty(), "the correction left drift behind")

	g.Expect(env.Client.Delete(ctx, d)).To(Succeed())
	report, err = engine.CheckDrift(ctx, target, rel, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Drifted).To(ConsistOf(DriftedObject{ID: "Deployment/drift/app", Missing: true}))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(Equal(int32(1)), "a re-created object takes its ignored fields from the manifest")
	g.Expect(releaseOwner{name: "app", namespace: ns}.owns(d)).To(BeTrue(), "the re-created object left the release")
}

// installManifest creates the objects of manifest in ns as Helm does:
// annotated with release app of ns, by the field manager "helm".
func installManifest(g Gomega, c client.Client, ns, manifest string) {
	objs, err := decodeObjects([]byte(manifest))
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range objs {
		obj.SetNamespace(ns)
		obj.SetAnnotations(map[string]string{ReleaseNameAnnotation: "app", ReleaseNamespaceAnnotation: ns})
		g.Expect(c.Create(context.Background(), obj, client.FieldOwner("helm"))).To(Succeed())
	}
}

// editByHand reads obj, changes it and writes it back as a person would.
func editByHand(g Gomega, c client.Client, obj client.Object, change func(client.Object)) {
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	change(obj)
	g.Expect(c.Update(context.Background(), obj, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

// managedBy is the fields manager owns in obj, as managedFields JSON.
func managedBy(obj client.Object, manager string) string {
	fields := ""
	for _, entry := range obj.GetManagedFields() {
		if entry.Manager == manager && entry.FieldsV1 != nil {
			fields += entry.FieldsV1.GetRawString()
		}
	}
	return fields
}

func configMap(g Gomega, c client.Client, ns, name string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm.Data
}

// TestCorrectDrift_staleDiffFailsAlone: an object changed again after the
// comparison is not patched from the stale diff (the resourceVersion test
// fails, the next pass compares again), and its failure does not keep the
// other drifted objects from being corrected.
func TestCorrectDrift_staleDiffFailsAlone(t *testing.T) {
	g := NewWithT(t)
	env, _ := startEngine(t)
	ctx := context.Background()
	const ns = "stale"
	g.Expect(env.Client.Create(ctx, namespaceObject(ns))).To(Succeed())
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {message: from-the-chart}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {message: from-the-chart}\n"
	installManifest(g, env.Client, ns, manifest)
	for _, name := range []string{"a", "b"} {
		editByHand(g, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(o client.Object) {
			o.(*corev1.ConfigMap).Data["message"] = "edited"
		})
	}
	objs, err := manifestObjects(manifest, ns, env.Client.RESTMapper())
	g.Expect(err).NotTo(HaveOccurred())
	diffs, err := jsondiff.UnstructuredList(ctx, env.Client, objs, jsondiff.FieldOwner(driftFieldOwner))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diffs).To(HaveLen(2))
	editByHand(g, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}, func(o client.Object) {
		o.(*corev1.ConfigMap).Data["message"] = "edited again"
	})

	err = correctDrift(ctx, env.Client, releaseOwner{name: "app", namespace: ns}, diffs, nil)
	g.Expect(err).To(MatchError(ContainSubstring("correcting drift of ConfigMap/stale/a")))
	g.Expect(err.Error()).NotTo(ContainSubstring("ConfigMap/stale/b"))
	g.Expect(configMap(g, env.Client, ns, "a")).To(HaveKeyWithValue("message", "edited again"))
	g.Expect(configMap(g, env.Client, ns, "b")).To(HaveKeyWithValue("message", "from-the-chart"))
}
