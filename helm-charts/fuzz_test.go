package helmcharts_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/watches"
)

// fuzzSpec builds a Habitat .spec with a fuzzed string in every string field.
func fuzzSpec(s []string, count int64, generateRingKey bool) map[string]any {
	return map[string]any{
		"image": s[0],
		"count": count,
		"service": map[string]any{
			"name": s[1], "topology": s[2], "group": s[3], "channel": s[4], "configSecretName": s[5],
			"ring": s[6], "ringSecretName": s[7], "generateRingKey": generateRingKey,
			"bind": []any{map[string]any{"name": s[8], "service": s[9], "group": s[3]}},
		},
		"env": []any{map[string]any{"name": s[10], "value": s[11]},
			map[string]any{"name": s[1], "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": s[5], "key": s[12]}}}},
		"persistentStorage": map[string]any{"size": s[13], "mountPath": s[14], "storageClassName": s[15]},
		"resources":         map[string]any{"limits": map[string]any{s[12]: s[13]}, "claims": []any{map[string]any{"name": s[16]}}},
	}
}

// FuzzHabitatChart renders the Habitat chart from arbitrary specs, through
// the values path of the chart-backed controller (the repository's
// watches.yaml entry and Watch.Values), twice: with values.schema.json, the
// offline image of the CRD's constraints, and without it, so that the
// templates' quoting alone is proven too. Whatever the strings hold, a
// render that succeeds yields exactly the chart's own objects: one
// StatefulSet and one Service, both in the release's namespace, no extra
// document.
func FuzzHabitatChart(f *testing.F) {
	f.Add("core/redis:4", "redis", "leader", "prod", "stable", "redis-config", "shop", "shop-20260101000000",
		"db", "redis", "LOG", "debug", "user.toml", "1Gi", "/hab/svc/redis/data", "fast", "gpu", int64(3), false)
	f.Add("core/redis:4", "redis", "leader", "prod", "stable", "redis-config", "shop", "shop-20260101000000",
		"db", "redis", "LOG", "debug", "user.toml", "1Gi", injection+injectionTail, "fast", "gpu", int64(3), false)
	f.Add("x\" }\nkind: Secret", "r\n---\n", "none\n", "g: {", "'", "\"", "{{ .Release.Name }}", "a\\\"",
		"[", "]", "A\nB: c", "\x00", "#", "1\n2", "/\n---\napiVersion: v1\nkind: Namespace", "- x", "&a", int64(0), false)
	w := habitatWatch(f)
	f.Fuzz(func(t *testing.T, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16 string, count int64, generateRingKey bool) {
		strs := []string{s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16}
		values, err := w.Values(fuzzSpec(strs, count, generateRingKey))
		if err != nil {
			return
		}
		for _, schema := range []bool{true, false} {
			manifest, ok := renderFuzzed(w, values, schema)
			if ok {
				checkOwnObjects(t, manifest)
			}
		}
	})
}

// habitatWatch is the repository's watches.yaml entry of Habitat.
func habitatWatch(f *testing.F) watches.Watch {
	list, err := watches.Load(filepath.Join("..", "watches.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, w := range list {
		if w.Kind == "Habitat" {
			return w
		}
	}
	f.Fatal("watches.yaml has no Habitat entry")
	return watches.Watch{}
}

// renderFuzzed renders the chart as release web in namespace shop; ok is
// false when Helm refused the values or the templates failed.
func renderFuzzed(w watches.Watch, values map[string]any, withSchema bool) (string, bool) {
	chrt := *w.LoadedChart
	if !withSchema {
		chrt.Schema = nil
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace = "web", "shop"
	install.KubeVersion = &common.KubeVersion{Version: "v1.35.0", Major: "1", Minor: "35"}
	rel, err := install.Run(&chrt, values)
	if err != nil {
		return "", false
	}
	return rel.(*release.Release).Manifest, true
}

// checkOwnObjects fails unless manifest holds exactly a StatefulSet and a
// Service named web in namespace shop.
func checkOwnObjects(t *testing.T, manifest string) {
	t.Helper()
	var got []string
	for _, doc := range releaseutil.SplitManifests(manifest) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("a rendered document does not parse: %v\n%s", err, doc)
		}
		if len(obj.Object) == 0 {
			continue
		}
		got = append(got, obj.GetAPIVersion()+" "+obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName())
	}
	want := "apps/v1 StatefulSet shop/web, v1 Service shop/web"
	slices.Sort(got)
	if strings.Join(got, ", ") != want {
		t.Fatalf("rendered %v, want exactly %s\n%s", got, want, manifest)
	}
}
