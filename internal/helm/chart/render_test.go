package chart_test

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// Sanity checks of the test charts with Helm's own engine, so that a broken
// chart fails here rather than as a puzzling e2e failure.

func loadTestChart(t *testing.T, name string) *chart.Result {
	t.Helper()
	res, err := chart.LoadDir(filepath.Dir(chartrepo.ChartDir(name)), name)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// kinds lists "Kind name" of every object in a rendered manifest.
func kinds(t *testing.T, manifest string) []string {
	t.Helper()
	var out []string
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if obj.Kind != "" {
			out = append(out, obj.Kind+" "+obj.Metadata.Name)
		}
	}
	sort.Strings(out)
	return out
}

// hook returns the rendered hook of that name.
func hook(rel *release.Release, name string) *release.Hook {
	for _, h := range rel.Hooks {
		if h.Name == name {
			return h
		}
	}
	return nil
}

func TestTestCharts_realisticRendersExpectedKinds(t *testing.T) {
	g := NewWithT(t)
	res := loadTestChart(t, "realistic")

	rel, err := render(res.Chart, nil)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(t, rel.Manifest)).To(Equal([]string{
		"Deployment test-realistic",
		"Role test-realistic",
		"RoleBinding test-realistic",
		"Service test-realistic",
		"ServiceAccount test-realistic",
	}))
	crds := res.Chart.CRDObjects()
	g.Expect(crds).To(HaveLen(1))
	g.Expect(kinds(t, string(crds[0].File.Data))).To(Equal([]string{"CustomResourceDefinition widgets.test.kraan.io"}))

	preUpgrade := hook(rel, "test-realistic-pre-upgrade")
	g.Expect(preUpgrade).NotTo(BeNil())
	g.Expect(preUpgrade.Kind).To(Equal("Job"))
	g.Expect(preUpgrade.Events).To(Equal([]release.HookEvent{release.HookPreUpgrade}))
	test := hook(rel, "test-realistic-test")
	g.Expect(test).NotTo(BeNil())
	g.Expect(test.Kind).To(Equal("Job"))
	g.Expect(test.Events).To(Equal([]release.HookEvent{release.HookTest}))
}

// The failing hooks must fail under kwok, where commands never run: their
// pod must be unschedulable and their Job must have a deadline (README.md of
// the chart explains why).
func TestTestCharts_realisticHooksFailByValue(t *testing.T) {
	tests := []struct {
		name     string
		values   map[string]any
		hook     string
		wantFail bool
	}{
		{name: "test passes by default", hook: "test-realistic-test"},
		{name: "test fails", values: map[string]any{"test": map[string]any{"fail": true}}, hook: "test-realistic-test", wantFail: true},
		{name: "pre-upgrade passes by default", hook: "test-realistic-pre-upgrade"},
		{
			name:     "pre-upgrade fails",
			values:   map[string]any{"hooks": map[string]any{"preUpgrade": map[string]any{"fail": true}}},
			hook:     "test-realistic-pre-upgrade",
			wantFail: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rel, err := render(loadTestChart(t, "realistic").Chart, tt.values)
			g.Expect(err).NotTo(HaveOccurred())
			h := hook(rel, tt.hook)
			g.Expect(h).NotTo(BeNil())

			var job struct {
				Spec struct {
					BackoffLimit          *int `json:"backoffLimit"`
					ActiveDeadlineSeconds *int `json:"activeDeadlineSeconds"`
					Template              struct {
						Spec struct {
							NodeSelector  map[string]string `json:"nodeSelector"`
							RestartPolicy string            `json:"restartPolicy"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			g.Expect(yaml.Unmarshal([]byte(h.Manifest), &job)).To(Succeed())
			g.Expect(job.Spec.BackoffLimit).To(HaveValue(Equal(0)))
			g.Expect(job.Spec.Template.Spec.RestartPolicy).To(Equal("Never"))
			if tt.wantFail {
				g.Expect(job.Spec.ActiveDeadlineSeconds).To(HaveValue(Equal(1)))
				g.Expect(job.Spec.Template.Spec.NodeSelector).To(HaveKeyWithValue("kraan.io/never-scheduled", "true"))
				g.Expect(h.Manifest).To(ContainSubstring("exit 1"))
				return
			}
			g.Expect(job.Spec.ActiveDeadlineSeconds).To(BeNil())
			g.Expect(job.Spec.Template.Spec.NodeSelector).To(BeEmpty())
		})
	}
}

func TestTestCharts_smallRendersExpectedKinds(t *testing.T) {
	g := NewWithT(t)

	rel, err := render(loadTestChart(t, "small").Chart, map[string]any{"message": "hi"})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(t, rel.Manifest)).To(Equal([]string{"ConfigMap test", "Deployment test", "Service test"}))
	g.Expect(rel.Manifest).To(ContainSubstring(`message: "hi"`))
}

func TestTestCharts_smallSchemaRejectsBadValues(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{name: "wrong type", values: map[string]any{"replicaCount": "two"}, want: "replicaCount"},
		{name: "out of range", values: map[string]any{"replicaCount": 100}, want: "replicaCount"},
		{name: "empty image", values: map[string]any{"image": ""}, want: "image"},
		{name: "message not a string", values: map[string]any{"message": 42}, want: "message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := render(loadTestChart(t, "small").Chart, tt.values)
			g.Expect(err).To(MatchError(And(
				ContainSubstring("values don't meet the specifications of the schema(s)"),
				ContainSubstring(tt.want),
			)))
		})
	}
}

func TestTestCharts_lint(t *testing.T) {
	for _, name := range []string{"small", "realistic", "withdeps"} {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			result := lint.Run([]string{chartrepo.ChartDir(name)}, nil)
			var problems []string
			for _, m := range result.Messages {
				// INFO is advice such as "icon is recommended".
				if m.Severity >= support.WarningSev {
					problems = append(problems, m.Error())
				}
			}
			for _, err := range result.Errors {
				problems = append(problems, err.Error())
			}
			if len(problems) > 0 {
				t.Errorf("helm lint --strict %s:\n%s", name, strings.Join(problems, "\n"))
			}
		})
	}
}
