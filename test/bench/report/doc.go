// Package report holds what `make bench` (test/bench) measures: the result
// types written as JSON under bin/bench/, the tables printed from them and the
// SVG plot rendered from them with gonum.org/v1/plot. It imports nothing of
// the bench itself, so a results.json from any run can be re-rendered later
// (see the benchplot command beside it).
package report
