package soak_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// operation is one kind of change the workload makes.
type operation struct {
	name   string
	weight int
	// apply makes the change and says what it did; it returns "" when it
	// cannot apply now (nothing is left to delete, say) and did nothing.
	apply func(w *workload, g Gomega) string
}

// operations are the workload's kinds of change. Each runs at least once
// in every soak (step takes them in a shuffled order first), then they are
// drawn by weight.
var operations = []operation{
	{"standalone values", 3, (*workload).standaloneValues},
	{"standalone chart version", 2, (*workload).standaloneChart},
	{"standalone deletion", 1, (*workload).standaloneDelete},
	{"layer values", 3, (*workload).layerValues},
	{"layer chart version", 2, (*workload).layerChart},
	{"layer deletion", 1, (*workload).layerDelete},
	{"layer version", 2, (*workload).layerVersionBump},
	{"habitat image", 1, (*workload).habitatImage},
}

// step applies the operations of one cycle: n of them, more when every
// kind has yet to run once in the cycles left. It returns what they did.
func (w *workload) step(g Gomega, cyclesLeft int, unrun *[]int) []string {
	n := 1 + w.rnd.IntN(w.size.maxOps)
	n = max(n, (len(*unrun)+cyclesLeft-1)/cyclesLeft)
	var did []string
	for range n {
		if d := w.apply(g, w.pick(unrun)); d != "" {
			did = append(did, d)
		}
	}
	return did
}

// pick returns the next operation: the first of those not run yet, else one
// drawn by weight.
func (w *workload) pick(unrun *[]int) operation {
	if len(*unrun) > 0 {
		op := operations[(*unrun)[0]]
		*unrun = (*unrun)[1:]
		return op
	}
	total := 0
	for _, op := range operations {
		total += op.weight
	}
	n := w.rnd.IntN(total)
	for _, op := range operations {
		if n < op.weight {
			return op
		}
		n -= op.weight
	}
	panic("unreachable: n is below the total weight")
}

// apply runs op and logs it; it returns what it did, named, or "".
func (w *workload) apply(g Gomega, op operation) string {
	did := op.apply(w, g)
	if did == "" {
		return ""
	}
	did = op.name + ": " + did
	w.log = append(w.log, did)
	return did
}

// live returns the releases not deleted that match.
func (w *workload) live(match func(*release) bool) []*release {
	var out []*release
	for _, r := range w.releases {
		if !r.deleted && match(r) {
			out = append(out, r)
		}
	}
	return out
}

// choose returns up to n distinct releases of rs, drawn at random.
func (w *workload) choose(rs []*release, n int) []*release {
	w.rnd.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	return rs[:min(n, len(rs))]
}

func isStandalone(r *release) bool { return r.kind == kindHelmRelease && r.layer < 0 }

func inLayer(r *release) bool { return r.layer >= 0 }

func names(rs []*release) string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.namespace+"/"+r.name)
	}
	return strings.Join(out, ", ")
}

func (w *workload) standaloneValues(g Gomega) string {
	rs := w.choose(w.live(isStandalone), 1+w.rnd.IntN(2))
	if len(rs) == 0 {
		return ""
	}
	for _, r := range rs {
		r.message = w.nextMessage()
		r.history = append(r.history, w.helmState(r))
		updateHelmRelease(g, r, func(hr *kraanv1.HelmRelease) { hr.Spec.Values = toJSON(map[string]any{"message": r.message}) })
	}
	return names(rs)
}

func (w *workload) standaloneChart(g Gomega) string {
	rs := w.choose(w.live(isStandalone), 1)
	if len(rs) == 0 {
		return ""
	}
	for _, r := range rs {
		r.chart = nextChart(r.chart)
		r.history = append(r.history, w.helmState(r))
		updateHelmRelease(g, r, func(hr *kraanv1.HelmRelease) { hr.Spec.Chart.Spec.Version = r.chart })
	}
	return names(rs)
}

// standaloneDelete deletes one standalone HelmRelease, keeping at least
// two thirds of them.
func (w *workload) standaloneDelete(g Gomega) string {
	live := w.live(isStandalone)
	if len(live) <= w.size.standalone-w.size.standalone/3 || len(live) < 2 {
		return ""
	}
	r := w.choose(live, 1)[0]
	r.deleted = true
	hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.name}}
	g.Eventually(func() error {
		return client.IgnoreNotFound(k8s.Delete(context.Background(), hr))
	}).WithTimeout(writeTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	return r.namespace + "/" + r.name
}

func (w *workload) layerValues(g Gomega) string {
	rs := w.choose(w.live(inLayer), 1+w.rnd.IntN(3))
	for _, r := range rs {
		r.message = w.nextMessage()
		r.history = append(r.history, w.helmState(r))
	}
	w.commit(g, "values of "+names(rs))
	return names(rs)
}

func (w *workload) layerChart(g Gomega) string {
	rs := w.choose(w.live(inLayer), 1+w.rnd.IntN(2))
	for _, r := range rs {
		r.chart = nextChart(r.chart)
		r.history = append(r.history, w.helmState(r))
	}
	w.commit(g, "chart version of "+names(rs))
	return names(rs)
}

// layerDelete removes one HelmRelease from its layer's directory in Git:
// the layer prunes it after its interval, which uninstalls it. Each layer
// keeps at least two thirds of its releases, and at least one.
func (w *workload) layerDelete(g Gomega) string {
	var candidates []*release
	for l := range w.size.layers {
		live := w.live(func(r *release) bool { return r.layer == l })
		if len(live) > 1 && len(live) > w.size.layerReleases-max(1, w.size.layerReleases/3) {
			candidates = append(candidates, live...)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	r := w.choose(candidates, 1)[0]
	r.deleted = true
	w.commit(g, "remove "+r.namespace+"/"+r.name)
	return r.namespace + "/" + r.name
}

// layerVersionBump moves every layer to the next version, dependents
// first, as the e2e layer test does: each then waits for the layer it
// depends on at the new version. The releases that follow the version are
// upgraded; the others must not be.
func (w *workload) layerVersionBump(g Gomega) string {
	w.layerVersion++
	for _, r := range w.live(func(r *release) bool { return r.followsVersion }) {
		r.history = append(r.history, w.helmState(r))
	}
	for l := w.size.layers - 1; l >= 0; l-- {
		want := w.layer(l).Spec
		g.Eventually(func(g Gomega) {
			al := &kraanv1.AddonsLayer{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: layerName(l)}, al)).To(Succeed())
			al.Spec.Version, al.Spec.Prereqs.DependsOn = want.Version, want.Prereqs.DependsOn
			g.Expect(k8s.Update(context.Background(), al)).To(Succeed())
		}).WithTimeout(writeTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	}
	return w.version()
}

// habitatImage changes the Habitat's image, which rolls its StatefulSet,
// up to maxHabitatChanges times.
func (w *workload) habitatImage(g Gomega) string {
	if w.habitat.changes >= maxHabitatChanges {
		return ""
	}
	w.habitat.changes++
	w.habitat.image++
	image := fmt.Sprintf("habitat/redis:%d", w.habitat.image)
	key := client.ObjectKey{Namespace: habitatNamespace, Name: habitatName}
	g.Eventually(func(g Gomega) {
		hab := &habitatv1.Habitat{}
		g.Expect(k8s.Get(context.Background(), key, hab)).To(Succeed())
		hab.Spec.Image = image
		g.Expect(k8s.Update(context.Background(), hab)).To(Succeed())
	}).WithTimeout(writeTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	for _, r := range w.releases {
		if r.kind == kindHabitat {
			r.history = append(r.history, state{values: habitatSpec(g)})
		}
	}
	return image
}

// updateHelmRelease changes a HelmRelease's spec, retrying on conflicts
// with the operator and while the apiserver is away.
func updateHelmRelease(g Gomega, r *release, change func(*kraanv1.HelmRelease)) {
	g.Eventually(func(g Gomega) {
		hr := &kraanv1.HelmRelease{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: r.namespace, Name: r.name}, hr)).To(Succeed())
		change(hr)
		g.Expect(k8s.Update(context.Background(), hr)).To(Succeed())
	}).WithTimeout(writeTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}
