package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
)

// testChart is a chart with a subchart, a partial, NOTES.txt and a
// template printing backquotes and template delimiters.
func testChart(templates map[string]string) *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "0.1.0", APIVersion: "v2"},
		Values: map[string]any{"name": "web", "replicas": 2}}
	for name, data := range templates {
		c.Templates = append(c.Templates, &common.File{Name: name, Data: []byte(data)})
	}
	sub := &chart.Chart{Metadata: &chart.Metadata{Name: "sub", Version: "0.1.0", APIVersion: "v2"}, Values: map[string]any{"x": "y"},
		Templates: []*common.File{{Name: "templates/sub.yaml", Data: []byte("kind: ConfigMap\nname: {{ .Values.x }}-{{ .Release.Name }}\n")}}}
	c.SetDependencies(sub)
	return c
}

var (
	testRelease = common.ReleaseOptions{Name: "rel", Namespace: "ns", Revision: 3, IsUpgrade: true}
	testCaps    = common.DefaultCapabilities
)

// inProcess is how Helm's engine renders c in the operator's process.
func inProcess(t *testing.T, c *chart.Chart, values map[string]any) map[string]string {
	t.Helper()
	vals, err := util.ToRenderValues(c, values, testRelease, testCaps)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	files, err := engine.Engine{}.RenderWithContext(context.Background(), c, vals)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return files
}

func newTestRenderer(t *testing.T, limits Limits) *Renderer {
	t.Helper()
	r, err := New(limits)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return r
}

// The worker renders what the engine renders in process, lookups answered
// by the parent; the literal chart renders the same files again, in
// process, without running the chart's templates.
func TestRender_IsWhatHelmRenders_AndLiteralReproducesIt(t *testing.T) {
	g := NewWithT(t)
	c := testChart(map[string]string{
		"templates/_helpers.tpl": `{{ define "app.name" }}{{ .Values.name }}-{{ .Release.Name }}{{ end }}`,
		"templates/deploy.yaml":  "kind: Deployment\nname: {{ include \"app.name\" . }}\nreplicas: {{ .Values.replicas }}\nrev: {{ .Release.Revision }}\nq: \"`{{ \"{{\" }}`\"\nlooked: {{ (lookup \"v1\" \"ConfigMap\" \"ns\" \"cm\").data.k }}\n",
		"templates/NOTES.txt":    "Installed {{ .Release.Name }} on {{ .Capabilities.KubeVersion.Major }}",
	})
	values := map[string]any{"replicas": 5}
	var looked []string
	lookup := func(_ context.Context, apiVersion, kind, namespace, name string) (map[string]any, error) {
		looked = append(looked, apiVersion+" "+kind+" "+namespace+"/"+name)
		return map[string]any{"data": map[string]any{"k": "v"}}, nil
	}
	files, err := newTestRenderer(t, Limits{}).Render(context.Background(),
		Input{Chart: c, Values: values, Release: testRelease, Capabilities: testCaps, Lookup: lookup})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(looked).To(Equal([]string{"v1 ConfigMap ns/cm"}))
	g.Expect(files["app/templates/deploy.yaml"]).To(Equal("kind: Deployment\nname: web-rel\nreplicas: 5\nrev: 3\nq: \"`{{`\"\nlooked: v\n"))
	g.Expect(files["app/charts/sub/templates/sub.yaml"]).To(Equal("kind: ConfigMap\nname: y-rel\n"))
	g.Expect(files["app/templates/NOTES.txt"]).To(Equal("Installed rel on " + testCaps.KubeVersion.Major))

	literal := Literal(c, files)
	g.Expect(inProcess(t, literal, values)).To(Equal(files))
	g.Expect(string(c.Templates[0].Data)).NotTo(HavePrefix("{{`"), "the chart itself is left alone")
}

// A template that never ends is stopped at the time bound; the error names
// the flag. The renderer serves the next render at once.
func TestRender_StopsATemplateThatNeverEnds(t *testing.T) {
	g := NewWithT(t)
	r := newTestRenderer(t, Limits{Timeout: 3 * time.Second})
	c := testChart(map[string]string{"templates/loop.yaml": "{{ range 1000000000000 }}{{ range 1000000000000 }}{{ end }}{{ end }}"})
	start := time.Now()
	_, err := r.Render(context.Background(), Input{Chart: c, Release: testRelease, Capabilities: testCaps})
	limit := &LimitError{}
	g.Expect(errors.As(err, &limit)).To(BeTrue(), "%v", err)
	g.Expect(limit.What).To(Equal("time"))
	g.Expect(err.Error()).To(ContainSubstring(FlagTimeout))
	g.Expect(time.Since(start)).To(BeNumerically("<", 20*time.Second))

	files, err := r.Render(context.Background(), Input{Chart: testChart(nil), Release: testRelease, Capabilities: testCaps})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveKey("app/charts/sub/templates/sub.yaml"))
}

// A 1 KiB template repeating a string is stopped at the memory bound, or at
// the output bound when that comes first, never in the operator's memory.
func TestRender_BoundsMemoryAndOutput(t *testing.T) {
	g := NewWithT(t)
	bomb := testChart(map[string]string{"templates/bomb.yaml": `{{ range until 100000 }}{{ repeat 100000 "x" }}{{ end }}`})
	_, err := newTestRenderer(t, Limits{Memory: 96 << 20, Timeout: time.Minute}).Render(context.Background(),
		Input{Chart: bomb, Release: testRelease, Capabilities: testCaps})
	limit := &LimitError{}
	g.Expect(errors.As(err, &limit)).To(BeTrue(), "%v", err)
	g.Expect(limit.What).To(Equal("memory"))
	g.Expect(err.Error()).To(ContainSubstring(FlagMemory))

	large := testChart(map[string]string{"templates/large.yaml": `{{ repeat 3000000 "x" }}`})
	_, err = newTestRenderer(t, Limits{Output: 1 << 20}).Render(context.Background(),
		Input{Chart: large, Release: testRelease, Capabilities: testCaps})
	g.Expect(errors.As(err, &limit)).To(BeTrue(), "%v", err)
	g.Expect(limit.What).To(Equal("output"))
	g.Expect(err.Error()).To(And(ContainSubstring(FlagOutput), ContainSubstring("1Mi")))
}

// A template's error is the worker's answer, as Helm words it.
func TestRender_TemplateErrors(t *testing.T) {
	g := NewWithT(t)
	c := testChart(map[string]string{"templates/fail.yaml": `{{ fail "no database given" }}`})
	_, err := newTestRenderer(t, Limits{}).Render(context.Background(), Input{Chart: c, Release: testRelease, Capabilities: testCaps})
	g.Expect(err).To(MatchError(ContainSubstring("no database given")))
	g.Expect(errors.As(err, new(*LimitError))).To(BeFalse())
}

// Values keep their Go types across to the worker: an int64 prints as an
// integer, a float64 as Go prints it, a nil stays nil.
func TestRender_ValuesKeepTheirTypes(t *testing.T) {
	g := NewWithT(t)
	c := testChart(map[string]string{"templates/v.yaml": `{{ .Values.i }} {{ .Values.f }} {{ kindOf .Values.i }} {{ kindOf .Values.f }} {{ typeOf .Values.m }} {{ .Values.n | toJson }} {{ .Values.l }} {{ .Values.u }}`})
	c.Values["f"] = float64(1000000)
	values := map[string]any{"i": int64(1) << 40, "n": nil, "m": map[string]any{"a": "b"}, "l": []any{1, "x", 2.5}, "u": uint8(7)}
	files, err := newTestRenderer(t, Limits{}).Render(context.Background(), Input{Chart: c, Values: values, Release: testRelease, Capabilities: testCaps})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(Equal(inProcess(t, c, values)))
	g.Expect(files["app/templates/v.yaml"]).To(HavePrefix("1099511627776 1e+06 int64 float64"))
}

// Workers are shared fairly between tenants: one tenant's never-ending
// renders, queued four deep, delay another tenant's render by the one
// running, not by the whole queue.
func TestRender_WorkersAreSharedFairlyBetweenTenants(t *testing.T) {
	g := NewWithT(t)
	r := newTestRenderer(t, Limits{Timeout: 2 * time.Second, Concurrent: 1})
	loop := testChart(map[string]string{"templates/loop.yaml": "{{ range 1000000000000 }}{{ range 1000000000000 }}{{ end }}{{ end }}"})
	done := make(chan string, 5)
	for i := range 4 {
		go func() {
			_, _ = r.Render(context.Background(), Input{Chart: loop, Release: testRelease, Capabilities: testCaps, Tenant: "flood"})
			done <- "flood"
		}()
		if i == 0 {
			g.Eventually(func() int { return r.slots.Held("flood") }).Should(Equal(1))
		}
	}
	g.Eventually(r.slots.Waiting).Should(Equal(3), "the flood's renders queue first")
	began := time.Now()
	files, err := r.Render(context.Background(), Input{Chart: testChart(nil), Release: testRelease, Capabilities: testCaps, Tenant: "quiet"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	took := time.Since(began)
	flooded := len(done)
	t.Logf("the quiet tenant's render took %v behind the flood (%d of its 4 renders done)", took.Round(time.Millisecond), flooded)
	g.Expect(flooded).To(BeNumerically("<=", 1), "the quiet tenant waited for more than the running render")
}
