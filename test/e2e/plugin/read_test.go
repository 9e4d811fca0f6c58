package plugin_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/internal/plugin/graph"
)

func testGetLayersPrintsOneLinePerLayer(t *testing.T) {
	r := kraan(t, "get", "layers")
	NewWithT(t).Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	expectGolden(t, "get-layers.txt", r.stdout)
}

func testGetHelmReleasesAllNamespaces(t *testing.T) {
	r := kraan(t, "get", "helmreleases", "-A")
	NewWithT(t).Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	expectGolden(t, "get-helmreleases.txt", r.stdout)
}

func testGetOutputYAMLAndJSONAreTheObjects(t *testing.T) {
	g := NewWithT(t)
	r := kraan(t, "get", "layer", "top", "-o", "yaml")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	layer := &kraanv1.AddonsLayer{}
	g.Expect(yaml.UnmarshalStrict([]byte(r.stdout), layer)).To(Succeed())
	g.Expect(layer.Kind).To(Equal("AddonsLayer"))
	g.Expect(layer.Spec.Prereqs.DependsOn).To(Equal([]string{"base@0.1.0"}))

	r = kraan(t, "get", "layers", "-o", "yaml")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	list := &kraanv1.AddonsLayerList{}
	g.Expect(yaml.UnmarshalStrict([]byte(r.stdout), list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2))

	r = kraan(t, "get", "hr", "-n", ns, "-o", "json")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	releases := &kraanv1.HelmReleaseList{}
	g.Expect(json.Unmarshal([]byte(r.stdout), releases)).To(Succeed())
	g.Expect(releases.Items).To(HaveLen(1))
	g.Expect(releases.Items[0].Name).To(Equal(releaseName))
}

// lockedBuffer is an io.Writer read while a command writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testGetWatchPrintsChanges(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(t.Context())
	out := &lockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- runTo(ctx, out, "get", "helmreleases", "-n", ns, "--watch") }()
	g.Eventually(out.String, 30*time.Second).Should(MatchRegexp(`(?m)^app\s+diffy\s+0\.1\.0\s+Ready\s`))

	// A new annotation is a change the watch prints, as a second line of
	// the release. (Suspending it would make its layer re-apply it: later
	// tests' golden files need everything settled.)
	hr := &kraanv1.HelmRelease{}
	g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: releaseName}, hr)).To(Succeed())
	patch := client.MergeFrom(hr.DeepCopy())
	if hr.Annotations == nil {
		hr.Annotations = map[string]string{}
	}
	hr.Annotations["plugin-test"] = "watched"
	g.Expect(e.Client.Patch(ctx, hr, patch)).To(Succeed())
	g.Eventually(func() int { return strings.Count(out.String(), "\napp ") }, 30*time.Second).Should(BeNumerically(">=", 2))
	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(Equal(plugin.ExitOK)))
	waitReleaseReady(t)
	g.Expect(waitDeployed(t.Context(), "base", "top")).To(Succeed())
}

func testTreeLayerShowsReleasesAndTheirObjects(t *testing.T) {
	r := kraan(t, "tree", "layer", "base")
	NewWithT(t).Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	expectGolden(t, "tree-layer-base.txt", r.stdout)
}

func testTreeHelmReleaseShowsItsObjects(t *testing.T) {
	r := kraan(t, "tree", "helmrelease", "-n", ns, releaseName)
	NewWithT(t).Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	expectGolden(t, "tree-helmrelease.txt", r.stdout)
}

func testTraceReleaseObjectNamesReleaseLayerAndSources(t *testing.T) {
	r := kraan(t, "trace", "-n", ns, "configmap/app-settings")
	NewWithT(t).Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	expectGolden(t, "trace-configmap.txt", r.stdout)
}

func testTraceLayerObjectNamesLayer(t *testing.T) {
	g := NewWithT(t)
	r := kraan(t, "trace", "-n", ns, "cm/top-settings")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(r.stdout).To(ContainSubstring("Layer:        top [Deployed]"))
	g.Expect(r.stdout).NotTo(ContainSubstring("HelmRelease:"))

	// A HelmRelease traces to the layer that applied it.
	r = kraan(t, "trace", "-n", ns, "helmrelease/"+releaseName)
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(r.stdout).To(ContainSubstring("HelmRelease:  plug/app [Ready]"))
	g.Expect(r.stdout).To(ContainSubstring("Layer:        base [Deployed]"))

	// An object nobody manages is an error that says so.
	expectOneLineError(t, kraan(t, "trace", "-n", ns, "configmap/app-values"), "ConfigMap plug/app-values is not managed by kraan-operator")
}

// svgDoc is the part of an SVG document the graph test reads.
type svgDoc struct {
	XMLName xml.Name   `xml:"svg"`
	Groups  []svgGroup `xml:"g>g"`
}

type svgGroup struct {
	Class string    `xml:"class,attr"`
	Title string    `xml:"title"`
	Paths []svgPath `xml:"path"`
	Polys []svgPath `xml:"polygon"`
}

type svgPath struct {
	Fill string `xml:"fill,attr"`
}

func testGraphSVGHasOneNodePerLayerColouredByState(t *testing.T) {
	g := NewWithT(t)
	r := kraan(t, "graph", "-o", "svg")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	doc := svgDoc{}
	g.Expect(xml.Unmarshal([]byte(r.stdout), &doc)).To(Succeed())
	fills := map[string][]string{}
	for _, grp := range doc.Groups {
		if grp.Class != "node" {
			continue
		}
		for _, p := range append(grp.Paths, grp.Polys...) {
			fills[grp.Title] = append(fills[grp.Title], p.Fill)
		}
	}
	layers := &kraanv1.AddonsLayerList{}
	g.Expect(e.Client.List(t.Context(), layers)).To(Succeed())
	for _, l := range layers.Items {
		g.Expect(fills).To(HaveKeyWithValue("layer/"+l.Name, ContainElement(graph.Fills[graph.Good])), "layer %s is Deployed", l.Name)
	}
	g.Expect(fills).To(HaveKeyWithValue("helmrelease/"+ns+"/"+releaseName, ContainElement(graph.Fills[graph.Good])))
}

func testGraphDOTNamesCycles(t *testing.T) {
	g := NewWithT(t)
	// Two layers that depend on each other: the graph draws and names the cycle.
	a, b := newLayer("cycle-a", "./layers/top", "cycle-b@0.1.0"), newLayer("cycle-b", "./layers/top", "cycle-a@0.1.0")
	g.Expect(e.Client.Create(t.Context(), a)).To(Succeed())
	g.Expect(e.Client.Create(t.Context(), b)).To(Succeed())
	defer func() {
		g.Expect(e.Client.Delete(context.Background(), a)).To(Succeed())
		g.Expect(e.Client.Delete(context.Background(), b)).To(Succeed())
	}()
	r := kraan(t, "graph")
	g.Expect(r.code).To(Equal(plugin.ExitOK), r.stderr)
	g.Expect(r.stdout).To(ContainSubstring(`label="dependency cycle: layer/cycle-a → layer/cycle-b → layer/cycle-a"`))
	g.Expect(r.stdout).To(ContainSubstring(`"layer/cycle-a" -> "layer/cycle-b" [color="#c62828" penwidth=2];`))
	g.Expect(r.stdout).To(ContainSubstring(`"layer/top" -> "layer/base";`))

	png := kraan(t, "graph", "-o", "png")
	g.Expect(png.code).To(Equal(plugin.ExitOK), png.stderr)
	g.Expect(png.stdout).To(HavePrefix("\x89PNG\r\n"))
}

// layerOf reads a layer.
func layerOf(t *testing.T, name string) *kraanv1.AddonsLayer {
	t.Helper()
	l := &kraanv1.AddonsLayer{}
	NewWithT(t).Expect(e.Client.Get(t.Context(), client.ObjectKey{Name: name}, l)).To(Succeed())
	return l
}

// waitReleaseReady waits until the release is Ready at its generation again.
func waitReleaseReady(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		hr := &kraanv1.HelmRelease{}
		g.Expect(e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: releaseName}, hr)).To(Succeed())
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(hr.Status.Conditions).To(ContainElement(And(HaveField("Type", kraanv1.ReadyCondition), HaveField("Status", metav1.ConditionTrue))))
	}, time.Minute).Should(Succeed())
}
