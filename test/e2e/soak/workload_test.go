package soak_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/test/env"
)

// Namespaces of the workload; every object the soak creates or watches is
// in a namespace named soak-…
const (
	standaloneNamespace = "soak-standalone"
	habitatNamespace    = "soak-habitat"
	habitatName         = "hab"
	kindHelmRelease     = "HelmRelease"
	kindHabitat         = "Habitat"
)

// writeTimeout bounds each write of the workload, retried on conflicts with
// the operator and on the apiserver being away.
const writeTimeout = 2 * time.Minute

// maxHabitatChanges keeps the Habitat's revisions within the 10 the
// chart-backed controller keeps in Helm storage, so that the audit sees
// all of them.
const maxHabitatChanges = 6

// state is one desired state of a Helm release: what the operator must make
// its newest revision from.
type state struct {
	// chart is the chart version; "" for the Habitat, whose chart is the
	// operator's own and never changes.
	chart string
	// values are normalised through JSON, as Helm storage holds them.
	values map[string]any
}

func (s state) equal(o state) bool {
	return s.chart == o.chart && reflect.DeepEqual(s.values, o.values)
}

func (s state) String() string {
	data, _ := json.Marshal(s.values)
	if s.chart == "" {
		return string(data)
	}
	return fmt.Sprintf("chart %s values %s", s.chart, data)
}

// normalise returns v as JSON decodes it (numbers float64, maps
// map[string]any), the form Helm storage gives values back in.
func normalise(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

// release is the workload's record of one Helm release: what made it and
// every desired state it was given.
type release struct {
	kind            string // kindHelmRelease or kindHabitat
	namespace, name string
	// origin says where it comes from, for messages.
	origin string
	// layer is the index of the layer holding it, -1 for the others.
	layer int
	// followsVersion: annotated kraan.updateVersion, so its values carry
	// the layer's version and a version bump upgrades it.
	followsVersion bool
	// message and chart are a HelmRelease's values.message and chart version.
	message, chart string
	// history holds every desired state in the order the workload set
	// them, the one it was created with first.
	history []state
	deleted bool
}

func (r *release) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", r.kind, r.namespace, r.name, r.origin)
}

// want is the desired state now.
func (r *release) want() state { return r.history[len(r.history)-1] }

// changes is how many times the workload changed the desired state.
func (r *release) changes() int { return len(r.history) - 1 }

// workload creates the objects and applies the operations, drawing every
// choice from one seeded source, so a seed replays the same schedule.
type workload struct {
	t    *testing.T
	rnd  *rand.Rand
	size size

	releases []*release
	// layerVersion numbers the layers' version, 0.<layerVersion+1>.0.
	layerVersion int
	// revision is the Git revision committed last: every layer must end
	// Deployed at it.
	revision string
	messages int
	habitat  struct {
		image   int
		changes int
	}
	// log is every operation applied, for the report.
	log []string
}

func newWorkload(t *testing.T, s size) *workload {
	return &workload{t: t, rnd: rand.New(rand.NewPCG(uint64(s.seed), 0)), size: s}
}

func layerName(i int) string { return fmt.Sprintf("soak-l%d", i+1) }

func (w *workload) version() string { return fmt.Sprintf("0.%d.0", w.layerVersion+1) }

func (w *workload) nextMessage() string {
	w.messages++
	return fmt.Sprintf("message-%d", w.messages)
}

// nextChart is the chart version after v: the bumps cycle through every
// published version.
func nextChart(v string) string {
	for i, c := range chartVersions {
		if c == v {
			return chartVersions[(i+1)%len(chartVersions)]
		}
	}
	return chartVersions[0]
}

// helmState is the desired state of a HelmRelease: its chart, its message
// and, when it follows the layer's version, that version.
func (w *workload) helmState(r *release) state {
	values := map[string]any{"message": r.message}
	if r.followsVersion {
		values[manifest.VersionValue] = w.version()
	}
	return state{chart: r.chart, values: normalise(values)}
}

// create makes the initial workload: the layers' files in Git, the layers,
// the standalone HelmReleases and the Habitat. It does not wait for any of
// it: the first kill may interrupt the first installs.
func (w *workload) create() {
	g := NewWithT(w.t)
	for _, ns := range []string{standaloneNamespace, habitatNamespace} {
		g.Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	for l := range w.size.layers {
		for i := range w.size.layerReleases {
			r := &release{kind: kindHelmRelease, namespace: layerName(l), name: fmt.Sprintf("rel-%d", i),
				origin: "layer " + layerName(l), layer: l, followsVersion: i%2 == 1,
				message: w.nextMessage(), chart: chartVersions[0]}
			r.history = []state{w.helmState(r)}
			w.releases = append(w.releases, r)
		}
	}
	w.commit(g, "the layers' first revision")
	for l := w.size.layers - 1; l >= 0; l-- { // dependents first: they wait
		g.Expect(k8s.Create(context.Background(), w.layer(l))).To(Succeed())
	}
	for i := range w.size.standalone {
		r := &release{kind: kindHelmRelease, namespace: standaloneNamespace, name: fmt.Sprintf("solo-%d", i),
			origin: "standalone", layer: -1, message: w.nextMessage(), chart: chartVersions[i%len(chartVersions)]}
		r.history = []state{w.helmState(r)}
		g.Expect(k8s.Create(context.Background(), standaloneRelease(r))).To(Succeed())
		w.releases = append(w.releases, r)
	}
	w.createHabitat(g)
}

// layer is the AddonsLayer l at the current version, depending on the one
// before it. Its interval is also the grace period before a HelmRelease
// removed from Git is pruned: short, so deletions finish within the soak.
func (w *workload) layer(l int) *kraanv1.AddonsLayer {
	al := &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: layerName(l)},
		Spec: kraanv1.AddonsLayerSpec{
			Version: w.version(),
			Source: kraanv1.SourceSpec{Name: env.GitRepositoryName, Namespace: env.FluxNamespace,
				Path: "./addons/" + layerName(l)},
			Interval: metav1.Duration{Duration: 10 * time.Second},
			Timeout:  metav1.Duration{Duration: 2 * time.Minute},
		},
	}
	if l > 0 {
		al.Spec.Prereqs.DependsOn = []string{layerName(l-1) + "@" + w.version()}
	}
	return al
}

// helmReleaseSpec is what every HelmRelease of the soak shares: the small
// chart from the sources' HelmRepository, and all history kept (maxHistory
// 0), so that the audit sees every revision Helm made.
func helmReleaseSpec(r *release) map[string]any {
	return map[string]any{
		"interval":   "10m",
		"timeout":    "2m",
		"maxHistory": 0,
		"chart": map[string]any{"spec": map[string]any{
			"chart": "small", "version": r.chart,
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": env.HelmRepositoryName, "namespace": env.FluxNamespace},
		}},
		"values": map[string]any{"message": r.message},
	}
}

// standaloneRelease is a kraan.io HelmRelease created directly.
func standaloneRelease(r *release) *kraanv1.HelmRelease {
	hr := &kraanv1.HelmRelease{}
	data, err := json.Marshal(helmReleaseSpec(r))
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &hr.Spec); err != nil {
		panic(err)
	}
	hr.Name, hr.Namespace = r.name, r.namespace
	return hr
}

// fluxRelease is a layer's HelmRelease as a Kraan user writes it in Git:
// Flux's helm.toolkit.fluxcd.io/v2, which the layer converts.
func fluxRelease(r *release) string {
	obj := map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2",
		"kind":       "HelmRelease",
		"metadata":   map[string]any{"name": r.name, "namespace": r.namespace},
		"spec":       helmReleaseSpec(r),
	}
	if r.followsVersion {
		obj["metadata"].(map[string]any)["annotations"] = map[string]any{manifest.UpdateVersionAnnotation: "true"}
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// commit writes every layer's directory (its Namespace and the HelmReleases
// not deleted) and commits it; source-controller has fetched it when commit
// returns.
func (w *workload) commit(g Gomega, message string) {
	dir := filepath.Join(workDir, "layers")
	g.Expect(os.RemoveAll(dir)).To(Succeed())
	for l := range w.size.layers {
		layerDir := filepath.Join(dir, "addons", layerName(l))
		g.Expect(os.MkdirAll(layerDir, 0o755)).To(Succeed())
		ns := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", layerName(l))
		g.Expect(os.WriteFile(filepath.Join(layerDir, "namespace.yaml"), []byte(ns), 0o644)).To(Succeed())
	}
	for _, r := range w.releases {
		if r.layer >= 0 && !r.deleted {
			file := filepath.Join(dir, "addons", layerName(r.layer), r.name+".yaml")
			g.Expect(os.WriteFile(file, []byte(fluxRelease(r)), 0o644)).To(Succeed())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	rev, err := sources.Commit(ctx, message, map[string]string{".": dir})
	g.Expect(err).NotTo(HaveOccurred())
	w.revision = rev
}

// createHabitat creates the Habitat and records the spec the API server
// stored, defaults included: that is the release's values.
func (w *workload) createHabitat(g Gomega) {
	hab := &habitatv1.Habitat{
		ObjectMeta: metav1.ObjectMeta{Namespace: habitatNamespace, Name: habitatName},
		Spec: habitatv1.HabitatSpec{Image: "habitat/redis:0", Count: 1,
			Service: habitatv1.ServiceSpec{Name: "redis", Topology: habitatv1.TopologyStandalone}},
	}
	g.Expect(k8s.Create(context.Background(), hab)).To(Succeed())
	r := &release{kind: kindHabitat, namespace: habitatNamespace, name: habitatName, origin: "habitat", layer: -1}
	r.history = []state{{values: habitatSpec(g)}}
	w.releases = append(w.releases, r)
}

// habitatSpec reads the Habitat's spec as the chart-backed controller
// turns it into values.
func habitatSpec(g Gomega) map[string]any {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(habitatv1.GroupVersion.WithKind(kindHabitat))
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: habitatNamespace, Name: habitatName}, u)).To(Succeed())
	spec, _, err := unstructured.NestedMap(u.Object, "spec")
	g.Expect(err).NotTo(HaveOccurred())
	return normalise(spec)
}

// toJSON is a HelmRelease's spec.values.
func toJSON(values map[string]any) *apiextensionsv1.JSON {
	data, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	return &apiextensionsv1.JSON{Raw: data}
}
