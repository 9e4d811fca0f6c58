package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// layerOrder is the order the table lists the layers in: dependencies first.
var layerOrder = []string{"bootstrap", "base", "mgmt", "apps"}

// refresh is how often the table is redrawn.
const refresh = 250 * time.Millisecond

// watcher polls the layers, releases and Habitats and redraws the table.
type watcher struct {
	c             client.Client
	out           io.Writer
	version, rev  string
	start         time.Time
	width         int    // of the terminal; 0 when out is not one
	lastLines     int    // lines of the table drawn last, to redraw over them
	lastPlainDraw string // the table last printed when not on a terminal
}

func newWatcher(c client.Client, out io.Writer, version, rev string) *watcher {
	return &watcher{c: c, out: out, version: version, rev: rev, start: time.Now(), width: terminalWidth(out)}
}

// terminalWidth returns the width of out when it is a terminal, where the
// table is redrawn in place, and 0 elsewhere (a test, a log file), where it
// is printed on change.
func terminalWidth(out io.Writer) int {
	f, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil || w <= 0 {
		return 80
	}
	return w
}

// clip cuts every line of text to width-1 characters: a line that wrapped
// would break the count of lines to redraw over.
func clip(text string, width int) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		r := []rune(strings.TrimSuffix(l, "\n"))
		if len(r) >= width {
			lines[i] = string(r[:width-1]) + "\n"
		}
	}
	return strings.Join(lines, "")
}

// run redraws the table until everything is done or timeout passes.
func (w *watcher) run(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	for {
		s, err := w.snapshot(ctx)
		if err == nil {
			w.draw(s)
			if s.done() {
				fmt.Fprintf(w.out, "Everything is Deployed and Ready at version %s after %s.\n", w.version, roundDuration(time.Since(w.start)))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) { // Ctrl-C, not the timeout
				return fmt.Errorf("interrupted while version %s rolled out", w.version)
			}
			return fmt.Errorf("version %s not Deployed within %s (last table above): %w", w.version, timeout, errors.Join(ctx.Err(), err))
		case <-tick.C:
		}
	}
}

// layerRow and releaseRow are one line of the table each.
type layerRow struct {
	name, version, state, message string
	done                          bool
}

type releaseRow struct {
	name, chart, ready, message string
	done                        bool
}

// habitatRow is one Habitat: its Ready condition and supervisors.
type habitatRow struct {
	name, ready, supervisors, message string
	done                              bool
}

type snapshot struct {
	layers   []layerRow
	releases []releaseRow
	habitats []habitatRow
}

// done: every layer Deployed at the wanted version and revision, every
// release Ready for its current generation, and every Habitat Ready with all
// its supervisors running. The layers are listed first, so once they are
// done every Habitat they apply is in the list.
func (s snapshot) done() bool {
	if len(s.layers) != len(layerOrder) || len(s.releases) == 0 {
		return false
	}
	for _, l := range s.layers {
		if !l.done {
			return false
		}
	}
	for _, r := range s.releases {
		if !r.done {
			return false
		}
	}
	for _, h := range s.habitats {
		if !h.done {
			return false
		}
	}
	return true
}

// snapshot reads the layers, releases and Habitats.
func (w *watcher) snapshot(ctx context.Context) (snapshot, error) {
	var layers kraanv1.AddonsLayerList
	if err := w.c.List(ctx, &layers); err != nil {
		return snapshot{}, err
	}
	var releases kraanv1.HelmReleaseList
	if err := w.c.List(ctx, &releases); err != nil {
		return snapshot{}, err
	}
	var habitats habitatv1.HabitatList
	if err := w.c.List(ctx, &habitats); err != nil {
		return snapshot{}, err
	}
	var s snapshot
	for i := range layers.Items {
		s.layers = append(s.layers, w.layerRow(&layers.Items[i]))
	}
	sort.Slice(s.layers, func(i, j int) bool { return layerRank(s.layers[i].name) < layerRank(s.layers[j].name) })
	for i := range releases.Items {
		s.releases = append(s.releases, releaseRowOf(&releases.Items[i]))
	}
	sort.Slice(s.releases, func(i, j int) bool { return s.releases[i].name < s.releases[j].name })
	for i := range habitats.Items {
		s.habitats = append(s.habitats, habitatRowOf(&habitats.Items[i]))
	}
	sort.Slice(s.habitats, func(i, j int) bool { return s.habitats[i].name < s.habitats[j].name })
	return s, nil
}

// layerRank orders known layers by layerOrder and others after them.
func layerRank(name string) int {
	if i := slices.Index(layerOrder, name); i >= 0 {
		return i
	}
	return len(layerOrder)
}

// layerRow describes a layer.
func (w *watcher) layerRow(l *kraanv1.AddonsLayer) layerRow {
	return layerRow{name: l.Name, version: l.Status.Version, state: l.Status.State,
		message: readyMessage(l.Status.Conditions), done: layerDone(l, w.version, w.rev)}
}

func releaseRowOf(hr *kraanv1.HelmRelease) releaseRow {
	r := releaseRow{name: hr.Namespace + "/" + hr.Name, ready: "Unknown", message: readyMessage(hr.Status.Conditions)}
	if len(hr.Status.History) > 0 {
		r.chart = hr.Status.History[0].ChartName + "-" + hr.Status.History[0].ChartVersion
	}
	if c := apimeta.FindStatusCondition(hr.Status.Conditions, kraanv1.ReadyCondition); c != nil {
		r.ready = string(c.Status)
		r.done = c.Status == metav1.ConditionTrue && c.ObservedGeneration == hr.Generation
	}
	return r
}

// habitatRowOf describes a Habitat: done when Ready for its current
// generation (its release is deployed) and every supervisor of its
// StatefulSet is ready and in the peer list.
func habitatRowOf(h *habitatv1.Habitat) habitatRow {
	count := h.Spec.Count
	r := habitatRow{name: h.Namespace + "/" + h.Name, ready: "Unknown", message: readyMessage(h.Status.Conditions),
		supervisors: fmt.Sprintf("%d/%d", h.Status.ReadyReplicas, count)}
	if c := apimeta.FindStatusCondition(h.Status.Conditions, kraanv1.ReadyCondition); c != nil {
		r.ready = string(c.Status)
		r.done = c.Status == metav1.ConditionTrue && c.ObservedGeneration == h.Generation &&
			h.Status.ObservedGeneration == h.Generation &&
			h.Status.ReadyReplicas == count && len(h.Status.Peers) == int(count)
	}
	return r
}

// readyMessage is the message of the Ready condition, shortened for a table.
func readyMessage(conds []metav1.Condition) string {
	c := apimeta.FindStatusCondition(conds, kraanv1.ReadyCondition)
	if c == nil {
		return ""
	}
	const width = 90
	m := strings.ReplaceAll(c.Message, "\n", " ")
	if len(m) > width {
		m = m[:width-1] + "…"
	}
	return m
}

// draw redraws the table in place on a terminal; elsewhere it prints the
// table only when it changed, so that logs stay readable.
func (w *watcher) draw(s snapshot) {
	table := render(s)
	if w.width == 0 {
		if table != w.lastPlainDraw {
			fmt.Fprintf(w.out, "--- after %s\n%s", roundDuration(time.Since(w.start)), table)
			w.lastPlainDraw = table
		}
		return
	}
	if w.lastLines > 0 {
		fmt.Fprintf(w.out, "\033[%dA\033[J", w.lastLines) // cursor up, clear to the end
	}
	text := clip(fmt.Sprintf("elapsed %s\n%s", roundDuration(time.Since(w.start)), table), w.width)
	fmt.Fprint(w.out, text)
	w.lastLines = strings.Count(text, "\n")
}

// render formats the tables: layers, releases and, when there are any, Habitats.
func render(s snapshot) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tVERSION\tSTATE\tMESSAGE")
	for _, l := range s.layers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.name, l.version, l.state, l.message)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RELEASE\tCHART\tREADY\tMESSAGE")
	for _, r := range s.releases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, r.chart, r.ready, r.message)
	}
	_ = tw.Flush()
	if len(s.habitats) == 0 {
		return b.String()
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HABITAT\tSUPERVISORS\tREADY\tMESSAGE")
	for _, h := range s.habitats {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.name, h.supervisors, h.ready, h.message)
	}
	_ = tw.Flush()
	return b.String()
}
