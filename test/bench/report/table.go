package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Markdown writes the results as Markdown tables: per number of releases,
// one row per system and the operator's API requests by kind; then the
// layers. The same text is printed by the bench and pasted into
// docs/performance.md.
func Markdown(w io.Writer, r Results) {
	fmt.Fprintf(w, "Machine: %d CPUs, %d MiB memory, %s, %s; commit %s; %s\n\n",
		r.Machine.CPUs, r.Machine.MemoryMiB, r.Machine.GoVersion, r.Machine.Kernel, short(r.Machine.Commit), r.Machine.Date)
	for _, s := range r.Sizes {
		systems(w, s)
		byKind(w, s)
	}
	if r.Layers != nil {
		layers(w, *r.Layers)
	}
}

// systems is the side-by-side table of one size.
func systems(w io.Writer, s Size) {
	n := float64(s.Releases)
	op := s.Operator
	fmt.Fprintf(w, "### %d releases\n\n", s.Releases)
	fmt.Fprintln(w, "| system | all Ready | × raw | peak RSS | RSS Ready | RSS idle | idle CPU | API requests / release | "+
		"Helm actions / release / resync | Secret LISTs / release / resync | cold start |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	fmt.Fprintf(w, "| raw limit (%d appliers, server-side apply, waited Available) | %s | 1.00 | — | — | — | — | — | — | — | — |\n",
		s.Raw.Appliers, secs(s.Raw.Seconds))
	fmt.Fprintf(w, "| kraan-operator | %s | %s | %.0f MiB | %.0f MiB | %.0f MiB | %.2f %% | %.1f | %.3f | %.3f | %s |\n",
		secs(op.Seconds), ratio(op.Seconds, s.Raw.Seconds), op.PeakRSSMiB, op.ReadyRSSMiB, op.IdleRSSMiB, op.IdleCPUPercent,
		float64(op.Install.Total)/n, op.Resync.HelmActions/n, float64(op.Resync.SecretLists)/n, secs(op.ColdStart.Seconds))
	label := "sequential Helm SDK, wait (floor)"
	if s.SDK.Extrapolated {
		label = fmt.Sprintf("sequential Helm SDK, wait (floor; extrapolated from %d)", s.SDK.Measured)
	}
	fmt.Fprintf(w, "| %s | %s | %s | — | — | — | — | — | — | — | — |\n\n", label, secs(s.SDK.Seconds), ratio(s.SDK.Seconds, s.Raw.Seconds))
	fmt.Fprintf(w, "Operator: RSS idle %.0f MiB = %.0f MiB anonymous (Go heap in use %.0f MiB) + %.0f MiB of the executable "+
		"mapped from the page cache; ", op.IdleRSSMiB, op.IdleAnonMiB, op.IdleHeapMiB, op.IdleFileMiB)
	fmt.Fprintf(w, "rollout pacing during the install: limit up to %.0f, up to %.0f rolling out and %.0f queued at once; ",
		op.Pacing.MaxLimit, op.Pacing.MaxRolling, op.Pacing.MaxQueued)
	fmt.Fprintf(w, "status writes while installing %s; ", writesByCause(op.StatusWritesInstall, n))
	fmt.Fprintf(w, "CPU over the next %.0f s, settled: %.2f %% (%.0f reconciles in it); ",
		op.IdleWindowSeconds, op.SettledCPUPercent, op.SettledReconciles)
	fmt.Fprintf(w, "%.0f Helm actions while installing; idle CPU over %.0f s (%.0f reconciles in it); resync took %s "+
		"(%d new revisions); cold start: /readyz after %s, all confirmed Ready after %s (%.0f reconciles, "+
		"%.0f Helm actions, %d new revisions, %.1f API requests / release; RSS then %.0f MiB, peak %.0f MiB).\n\n",
		op.HelmActionsInstall, op.IdleWindowSeconds, op.IdleReconciles, secs(op.Resync.Seconds), op.Resync.NewRevisions,
		secs(op.ColdStart.ReadyzSeconds), secs(op.ColdStart.Seconds), op.ColdStart.Reconciles,
		op.ColdStart.HelmActions, op.ColdStart.NewRevisions, float64(op.ColdStart.Requests.Total)/n,
		op.ColdStart.RSSMiB, op.ColdStart.PeakRSSMiB)
}

// writesByCause lists status writes per release by cause, e.g.
// "1.00 queued + 1.00 reconcile = 2.00 / release".
func writesByCause(writes map[string]float64, n float64) string {
	if len(writes) == 0 {
		return "not counted"
	}
	causes := make([]string, 0, len(writes))
	for c := range writes {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	parts := make([]string, 0, len(causes))
	total := 0.0
	for _, c := range causes {
		parts = append(parts, fmt.Sprintf("%.2f %s", writes[c]/n, c))
		total += writes[c]
	}
	return fmt.Sprintf("%s = %.2f / release", strings.Join(parts, " + "), total/n)
}

// byKind lists the operator's API requests per release by kind, for the
// install and the resync, the largest first.
func byKind(w io.Writer, s Size) {
	n := float64(s.Releases)
	install, resync := s.Operator.Install.ByKind, s.Operator.Resync.Requests.ByKind
	kinds := make([]string, 0, len(install)+len(resync))
	seen := map[string]bool{}
	for _, m := range []map[string]int64{install, resync} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				kinds = append(kinds, k)
			}
		}
	}
	sort.Slice(kinds, func(i, j int) bool {
		a, b := install[kinds[i]]+resync[kinds[i]], install[kinds[j]]+resync[kinds[j]]
		if a != b {
			return a > b
		}
		return kinds[i] < kinds[j]
	})
	fmt.Fprintf(w, "Operator API requests by kind, per release (%d releases):\n\n", s.Releases)
	fmt.Fprintln(w, "| request | install | resync |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, k := range kinds {
		fmt.Fprintf(w, "| %s | %.2f | %.2f |\n", k, float64(install[k])/n, float64(resync[k])/n)
	}
	fmt.Fprintf(w, "| **total** | **%.2f** | **%.2f** |\n", float64(s.Operator.Install.Total)/n,
		float64(s.Operator.Resync.Requests.Total)/n)
	installWave, resyncWave := waveRequests(install), waveRequests(resync)
	fmt.Fprintf(w, "| of which each release's | %.2f | %.2f |\n",
		float64(s.Operator.Install.Total-installWave)/n, float64(s.Operator.Resync.Requests.Total-resyncWave)/n)
	fmt.Fprintf(w, "| of which the wave's (LIST, WATCH, discovery) | %.2f | %.2f |\n\n",
		float64(installWave)/n, float64(resyncWave)/n)
}

// waveRequests counts the requests no one release causes: the informers'
// LISTs and WATCHes (renewed every 5–10 minutes whatever the number of
// releases) and discovery (GETs of a path, not of an object). Divided by the
// releases they shrink as a wave grows; the rest is what each release costs.
func waveRequests(byKind map[string]int64) int64 {
	var n int64
	for k, c := range byKind {
		if strings.HasPrefix(k, "LIST ") || strings.HasPrefix(k, "WATCH ") || strings.HasPrefix(k, "GET /") {
			n += c
		}
	}
	return n
}

func layers(w io.Writer, l Layers) {
	fmt.Fprintf(w, "### %d chained layers × %d releases\n\n", l.Layers, l.ReleasesPerLayer)
	fmt.Fprintf(w, "All Deployed after %s; sum of the layers' raw times %s (× %s).\n\n",
		secs(l.Seconds), secs(l.RawSumSeconds), ratio(l.Seconds, l.RawSumSeconds))
	fmt.Fprintln(w, "| layer | deployed in | raw | × raw | hand-off from the layer before |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, e := range l.Each {
		handOff := "—"
		if e.HandOffSeconds != nil {
			handOff = secs(*e.HandOffSeconds)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", e.Name, secs(e.Seconds), secs(e.RawSeconds),
			ratio(e.Seconds, e.RawSeconds), handOff)
	}
	fmt.Fprintln(w)
}

func secs(s float64) string { return fmt.Sprintf("%.1f s", s) }

func ratio(a, b float64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return strings.TrimSpace(commit)
}
