// Command benchplot re-renders what `make bench` rendered from a
// results.json: the SVG plots and the Markdown tables. Given several files
// (comma-separated) it merges their sizes into one curve, a later file's
// size replacing an earlier one's.
//
//	go run ./test/bench/report/benchplot -in bin/bench/results.json -svg docs/images/bench.svg > tables.md
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kraan-io/kraan-operator/test/bench/report"
)

func main() {
	in := flag.String("in", "bin/bench/results.json", "results.json written by `make bench`; several, comma-separated, are merged")
	svg := flag.String("svg", "bin/bench/bench.svg", "SVG file to write; empty writes none")
	curves := flag.String("curves-svg", "", "SVG file to write the install waves' curves to; empty writes none")
	flag.Parse()
	var runs []report.Results
	for path := range strings.SplitSeq(*in, ",") {
		r, err := report.Read(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		runs = append(runs, r)
	}
	r := report.Merge(runs...)
	if *svg != "" {
		if err := report.Plot(r, *svg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *curves != "" {
		if err := report.PlotCurves(r, *curves); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	report.Markdown(os.Stdout, r)
}
