package helm

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"testing"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// Regression tests for what Helm 4 users hit when a post-renderer is set
// (helm/helm#31948, #32326; zarf-dev/zarf#4537): Helm 4 re-parses the
// rendered documents around the post-renderer, and a block scalar at the end
// of a document lost or gained its trailing newlines, and charts that glue
// a document to its separator ("---apiVersion: v1") stopped splitting. Each
// post-renderer of the engine, and their chain, must apply exactly what Helm
// applies without one.

// blockScalarTemplates end documents with block scalars: clip (|) and keep
// (|+) with blank lines, before a separator and at the end of a file without
// a final newline.
var blockScalarTemplates = map[string]string{
	"scripts.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: clip\ndata:\n  script: |\n    line one\n    line two\n\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\ndata:\n  script: |+\n    line one\n    line two\n\n\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep-last\ndata:\n  script: |+\n    line one\n    line two\n\n",
	"eof.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: clip-eof\ndata:\n  script: |\n    line one\n    line two",
}

// blockScalarsWithoutPostRenderer are the values Helm applies from
// blockScalarTemplates without a post-renderer: YAML's, except that Helm
// ends every document it applies with one more newline, which a keep
// scalar keeps.
var blockScalarsWithoutPostRenderer = map[string]string{
	"clip":      "line one\nline two\n",
	"keep":      "line one\nline two\n\n\n\n",
	"keep-last": "line one\nline two\n\n\n",
	"clip-eof":  "line one\nline two\n",
}

// blockScalarsWant are the values applied under strategy with a
// post-renderer: Helm's without one, except that under combined Helm 4
// post-renders each template file's documents as YAML reads them, and a
// keep scalar ending a document that is not the last of its file keeps
// exactly its own newlines (YAML's value) instead of Helm's one more.
func blockScalarsWant(strategy kraanv1.PostRenderStrategy, postRendered bool) map[string]string {
	want := maps.Clone(blockScalarsWithoutPostRenderer)
	if postRendered && strategy == kraanv1.PostRenderStrategyCombined {
		want["keep"] = "line one\nline two\n\n\n"
	}
	return want
}

// gluedSeparatorTemplates split into four ConfigMaps only when "---" is
// read as a separator wherever it starts a line, followed by a document, a
// comment or nothing.
var gluedSeparatorTemplates = map[string]string{
	"glued.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\ndata: {a: b}\n" +
		"---apiVersion: v1\nkind: ConfigMap\nmetadata: {name: glued}\ndata: {a: b}\n" +
		"--- # the next one\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: commented}\ndata: {a: b}\n" +
		"---\n---\n# leading comment\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: after-empty}\ndata: {a: b}\n",
}

// postRendererCase is one way the engine post-renders a release.
type postRendererCase struct {
	name string
	spec func() PostRender
	// last is the caller's post-renderer (chart-backed kinds' owner
	// references), given the namespace and its owner.
	last func(ns string, owner metav1.OwnerReference, e *testenv.Env) postrenderer.PostRenderer
}

func ownerRefs(ns string, owner metav1.OwnerReference, e *testenv.Env) postrenderer.PostRenderer {
	return &OwnerRefPostRenderer{Owner: owner, Namespace: ns, Mapper: e.Client.RESTMapper()}
}

var postRendererCases = []postRendererCase{
	{name: "none", spec: func() PostRender { return PostRender{} }},
	{name: "commonMetadata", spec: func() PostRender {
		return PostRender{CommonMetadata: &kraanv1.CommonMetadata{Labels: map[string]string{"team": "platform"}}}
	}},
	{name: "kustomize-patches", spec: func() PostRender {
		return PostRender{Kustomize: []*kraanv1.KustomizePostRenderer{{
			Patches: []kraanv1.KustomizePatch{{
				Patch:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: any, labels: {patched: strategic}}\n",
				Target: &kraanv1.ObjectSelector{Kind: "ConfigMap"},
			}},
		}}}
	}},
	{name: "kustomize-images", spec: func() PostRender {
		return PostRender{Kustomize: []*kraanv1.KustomizePostRenderer{{
			Images: []kraanv1.KustomizeImage{{Name: "nginx", NewTag: "1.27"}},
		}}}
	}},
	{name: "owner-references", spec: func() PostRender { return PostRender{} }, last: ownerRefs},
	{name: "chain", spec: func() PostRender {
		return PostRender{
			Kustomize: []*kraanv1.KustomizePostRenderer{{
				Patches: []kraanv1.KustomizePatch{{
					Patch:  "- op: add\n  path: /metadata/labels\n  value: {patched: json6902}\n",
					Target: &kraanv1.ObjectSelector{Kind: "ConfigMap"},
				}},
				Images: []kraanv1.KustomizeImage{{Name: "nginx", NewTag: "1.27"}},
			}},
			CommonMetadata: &kraanv1.CommonMetadata{Annotations: map[string]string{"owner": "ops"}},
		}
	}, last: ownerRefs},
}

// installEachWay installs templates as a release under every post-renderer
// case and strategy, each in its own namespace, and hands check the
// namespace.
func installEachWay(t *testing.T, templates map[string]string,
	check func(g Gomega, c client.Client, ns string, strategy kraanv1.PostRenderStrategy, postRendered bool)) {
	env, engine := startEngine(t)
	c := templatedChart("fixtures", templates)
	for _, strategy := range strategies {
		for i, pr := range postRendererCases {
			t.Run(string(strategy)+"/"+pr.name, func(t *testing.T) {
				g := NewWithT(t)
				ns := fmt.Sprintf("%s-%d", strategy, i)
				testenv.CreateNamespace(t, env.Client, ns)
				req := noWaitRequest(ns, c, pr.spec(), strategy)
				if pr.last != nil {
					owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
					g.Expect(env.Client.Create(context.Background(), owner)).To(Succeed())
					req.PostRenderer = pr.last(ns, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}, env)
				}
				res, err := engine.Run(context.Background(), req)
				g.Expect(err).NotTo(HaveOccurred())
				for _, step := range res.Taken {
					g.Expect(step.Err).NotTo(HaveOccurred())
				}
				check(g, env.Client, ns, strategy, pr.name != "none")
			})
		}
	}
}

// TestEngine_Run_postRenderersKeepBlockScalarsByteForByte: every
// post-renderer, alone and chained, under every strategy, applies the block
// scalars Helm applies without one.
func TestEngine_Run_postRenderersKeepBlockScalarsByteForByte(t *testing.T) {
	installEachWay(t, blockScalarTemplates, func(g Gomega, c client.Client, ns string, strategy kraanv1.PostRenderStrategy, postRendered bool) {
		got := map[string]string{}
		for name := range blockScalarsWithoutPostRenderer {
			got[name] = liveConfigMap(g, c, ns, name).Data["script"]
		}
		g.Expect(got).To(Equal(blockScalarsWant(strategy, postRendered)))
	})
}

// TestEngine_Run_postRenderersSplitGluedSeparators: "---apiVersion: v1",
// "--- # comment" and an empty document split as Helm splits them without a
// post-renderer: every object is applied.
func TestEngine_Run_postRenderersSplitGluedSeparators(t *testing.T) {
	installEachWay(t, gluedSeparatorTemplates, func(g Gomega, c client.Client, ns string, _ kraanv1.PostRenderStrategy, _ bool) {
		list := &corev1.ConfigMapList{}
		g.Expect(c.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		names := make([]string, 0, len(list.Items))
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		g.Expect(names).To(ContainElements("first", "glued", "commented", "after-empty"))
	})
}

// TestPostRenderers_splitGluedSeparatorsOfARawStream: the engine's own
// post-renderers split a stream as Helm does, whatever hands it to them
// (Helm 4.3 normalizes the stream first; Helm 4.0 did not).
func TestPostRenderers_splitGluedSeparatorsOfARawStream(t *testing.T) {
	g := NewWithT(t)
	stream := gluedSeparatorTemplates["glued.yaml"]
	meta := &commonMetadataPostRenderer{&kraanv1.CommonMetadata{Labels: map[string]string{"team": "platform"}}}
	out, err := meta.Run(bytes.NewBufferString(stream))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objectsOf(g, out)).To(HaveKey("ConfigMap/glued"))
	g.Expect(objectsOf(g, out)).To(HaveLen(4))

	bounds := &BoundsPostRenderer{Bounds: &Bounds{Owner: "Habitat shop/web", Namespace: "shop", Kinds: []schema.GroupKind{{Kind: "Secret"}}},
		Mapper: boundsMapper()}
	_, err = bounds.Run(bytes.NewBufferString(stream))
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap")), "a glued document escaped the bounds check")
}

// TestForPostRendering_endsEveryManifestTemplateOnceMore: subcharts'
// templates too; partials and NOTES.txt are left alone, and so is the
// cached chart.
func TestForPostRendering_endsEveryManifestTemplateOnceMore(t *testing.T) {
	g := NewWithT(t)
	sub := templatedChart("sub", map[string]string{"cm.yaml": "a: |\n  x"})
	top := templatedChart("top", map[string]string{"cm.yaml": "a: |\n  x\n", "_helpers.tpl": "{{ define \"x\" }}{{ end }}", "NOTES.txt": "hi"})
	top.SetDependencies(sub)
	g.Expect(forPostRendering(top, nil)).To(BeIdenticalTo(top))

	got := forPostRendering(top, chain{})
	data := func(c *chart.Chart) map[string]string {
		m := map[string]string{}
		for _, f := range c.Templates {
			m[f.Name] = string(f.Data)
		}
		return m
	}
	g.Expect(data(got)).To(Equal(map[string]string{
		"templates/cm.yaml": "a: |\n  x\n\n", "templates/_helpers.tpl": "{{ define \"x\" }}{{ end }}", "templates/NOTES.txt": "hi",
	}))
	g.Expect(got.Dependencies()).To(HaveLen(1))
	g.Expect(data(got.Dependencies()[0])).To(Equal(map[string]string{"templates/cm.yaml": "a: |\n  x\n"}))
	g.Expect(got.Dependencies()[0].Parent()).To(BeIdenticalTo(got))
	g.Expect(data(top)["templates/cm.yaml"]).To(Equal("a: |\n  x\n"), "the cached chart changed")
	g.Expect(data(sub)["templates/cm.yaml"]).To(Equal("a: |\n  x"), "the cached subchart changed")
}
