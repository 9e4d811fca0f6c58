package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// strategies are the values of spec.postRenderStrategy.
var strategies = []kraanv1.PostRenderStrategy{
	kraanv1.PostRenderStrategyNoHooks, kraanv1.PostRenderStrategyCombined, kraanv1.PostRenderStrategySeparate,
}

// templatedChart is a chart named name whose templates are files (path
// under templates/ → content), as written, byte for byte.
func templatedChart(name string, files map[string]string) *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: "0.1.0"}}
	for path, content := range files {
		c.Templates = append(c.Templates, &common.File{Name: "templates/" + path, Data: []byte(content)})
	}
	return c
}

// noWaitRequest installs c as release "app" in namespace ns without waits
// (envtest runs no controllers), post-rendering hooks as strategy says.
func noWaitRequest(ns string, c *chart.Chart, pr PostRender, strategy kraanv1.PostRenderStrategy) Request {
	noWait := WaitOptions{DisableWait: true}
	return Request{
		Target:  Target{ReleaseName: "app", Namespace: ns, StorageNamespace: ns, PostRenderStrategy: strategy},
		Desired: Desired{Chart: c, ChartDigest: "sha256:" + c.Metadata.Name, PostRenderersDigest: postRenderDigest(pr)},
		Actions: Actions{
			Install:    InstallOptions{WaitOptions: noWait},
			Upgrade:    UpgradeOptions{WaitOptions: noWait},
			Uninstall:  UninstallOptions{DisableWait: true},
			PostRender: pr,
		},
	}
}

// postRenderDigest stands in for releasespec.PostRenderersDigest: empty
// without post-renderers, and otherwise a digest that changes with them.
func postRenderDigest(pr PostRender) string {
	if len(pr.Kustomize) == 0 && pr.CommonMetadata == nil {
		return ""
	}
	data, _ := json.Marshal(pr)
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// labelAndPatchConfigMaps is a kustomize post-renderer that patches every
// ConfigMap, and common metadata that labels every object.
func labelAndPatchConfigMaps() PostRender {
	return PostRender{
		Kustomize: []*kraanv1.KustomizePostRenderer{{Patches: []kraanv1.KustomizePatch{{
			Patch:  "- op: add\n  path: /data/patched\n  value: kustomize\n",
			Target: &kraanv1.ObjectSelector{Kind: "ConfigMap"},
		}}}},
		CommonMetadata: &kraanv1.CommonMetadata{Labels: map[string]string{"team": "platform"}},
	}
}

const settingsTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  from: template
`

// TestEngine_Run_postRenderStrategyDecidesWhetherHooksArePostRendered: under
// combined (Helm 4's and Flux v1.6's default) and separate, commonMetadata
// and a kustomize patch reach a pre-install hook as they reach the
// templates; under nohooks (Helm 3, UseHelm3Defaults) the hook is applied as
// the chart rendered it.
func TestEngine_Run_postRenderStrategyDecidesWhetherHooksArePostRendered(t *testing.T) {
	env, engine := startEngine(t)
	c := templatedChart("hooked", map[string]string{
		"settings.yaml": settingsTemplate,
		"hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: pre
  annotations:
    helm.sh/hook: pre-install
data:
  from: hook
`,
	})
	for _, strategy := range strategies {
		t.Run(string(strategy), func(t *testing.T) {
			g := NewWithT(t)
			ns := "hooked-" + string(strategy)
			testenv.CreateNamespace(t, env.Client, ns)
			res, err := engine.Run(context.Background(), noWaitRequest(ns, c, labelAndPatchConfigMaps(), strategy))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Latest.Version).To(Equal(1))

			template := liveConfigMap(g, env.Client, ns, "settings")
			g.Expect(template.Labels).To(HaveKeyWithValue("team", "platform"))
			g.Expect(template.Data).To(HaveKeyWithValue("patched", "kustomize"))
			hook := liveConfigMap(g, env.Client, ns, "pre")
			if strategy == kraanv1.PostRenderStrategyNoHooks {
				g.Expect(hook.Labels).NotTo(HaveKey("team"), "nohooks post-rendered the hook")
				g.Expect(hook.Data).To(Equal(map[string]string{"from": "hook"}))
				return
			}
			g.Expect(hook.Labels).To(HaveKeyWithValue("team", "platform"), "commonMetadata did not reach the hook")
			g.Expect(hook.Data).To(HaveKeyWithValue("patched", "kustomize"), "the kustomize patch did not reach the hook")
			g.Expect(hook.Annotations).NotTo(HaveKey(ContainSubstring("postrender-filename")), "Helm's bookkeeping annotation leaked")
		})
	}
}

// TestEngine_Run_hookAndTemplateOfOneIdentity: a chart whose pre-install
// hook and template are the same ConfigMap (Helm 4 users hit this with a
// ServiceAccount a hook needs before the templates exist). Kustomize refuses
// two resources of one identity in one stream, so under combined the
// install fails before anything is applied, naming the object; separate
// post-renders the hook and the template each in their own stream, and
// nohooks leaves the hook alone: both install, and the template's object is
// what remains.
func TestEngine_Run_hookAndTemplateOfOneIdentity(t *testing.T) {
	env, engine := startEngine(t)
	c := templatedChart("clash", map[string]string{
		"settings.yaml": settingsTemplate,
		"hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
data:
  from: hook
`,
	})
	for _, strategy := range strategies {
		t.Run(string(strategy), func(t *testing.T) {
			g := NewWithT(t)
			ns := "clash-" + string(strategy)
			testenv.CreateNamespace(t, env.Client, ns)
			res, err := engine.Run(context.Background(), noWaitRequest(ns, c, labelAndPatchConfigMaps(), strategy))
			if strategy == kraanv1.PostRenderStrategyCombined {
				g.Expect(err).To(MatchError(ContainSubstring("already registered id: ConfigMap.v1.[noGrp]/settings")))
				g.Expect(err).To(MatchError(ContainSubstring("spec.postRenderStrategy separate")), "no hint at the way out")
				g.Expect(res.Latest).To(BeNil(), "a release that cannot render was recorded")
				err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an object was applied: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			live := liveConfigMap(g, env.Client, ns, "settings")
			g.Expect(live.Data).To(HaveKeyWithValue("from", "template"))
			g.Expect(live.Data).To(HaveKeyWithValue("patched", "kustomize"))
			g.Expect(live.Labels).To(HaveKeyWithValue("team", "platform"))
			g.Expect(res.Latest.Hooks).To(HaveLen(1))
			hook := res.Latest.Hooks[0].Manifest
			g.Expect(hook).To(ContainSubstring("from: hook"))
			if strategy == kraanv1.PostRenderStrategySeparate {
				g.Expect(hook).To(ContainSubstring("patched: kustomize"), "separate did not post-render the hook")
				g.Expect(hook).To(ContainSubstring("team: platform"))
			} else {
				g.Expect(hook).NotTo(ContainSubstring("patched"), "nohooks post-rendered the hook")
			}
		})
	}
}

// TestEngine_Run_hooksStayConfinedWhateverTheStrategy: a chart-backed
// kind's release may not create a cluster-scoped object, hook or not, under
// any post-render strategy. Under combined and separate the bounds
// post-renderer refuses the hook before anything is applied; under nohooks
// (chart-backed kinds' own) the guard refuses it when Helm creates it.
func TestEngine_Run_hooksStayConfinedWhateverTheStrategy(t *testing.T) {
	env, engine := startEngine(t)
	c := templatedChart("escape", map[string]string{
		"settings.yaml": settingsTemplate,
		"hook.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: escaped
  annotations:
    helm.sh/hook: pre-install
rules: []
`,
	})
	for _, strategy := range strategies {
		t.Run(string(strategy), func(t *testing.T) {
			g := NewWithT(t)
			ns := "confined-" + string(strategy)
			testenv.CreateNamespace(t, env.Client, ns)
			req := noWaitRequest(ns, c, PostRender{}, strategy)
			req.Target.Bounds = &Bounds{Owner: "Habitat " + ns + "/web", Namespace: ns, Kinds: []schema.GroupKind{
				{Kind: "ConfigMap"}, {Group: rbacv1.GroupName, Kind: "ClusterRole"},
			}}
			req.PostRenderer = &BoundsPostRenderer{Bounds: req.Target.Bounds, Mapper: env.Client.RESTMapper()}
			res, err := engine.Run(context.Background(), req)
			// Refused when rendering, Run fails; refused when created, the
			// install failed and was remediated: its step says why.
			for _, step := range res.Taken {
				err = errors.Join(err, step.Err)
			}
			var oob *OutOfBoundsError
			g.Expect(errors.As(err, &oob)).To(BeTrue(), "not refused as out of bounds: %v", err)
			g.Expect(oob.Name).To(Equal("escaped"))
			err = env.Client.Get(context.Background(), types.NamespacedName{Name: "escaped"}, &rbacv1.ClusterRole{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hook escaped its bounds: %v", err)
		})
	}
}

func liveConfigMap(g Gomega, c client.Client, ns, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm
}
