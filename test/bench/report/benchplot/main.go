// Command benchplot re-renders what `make bench` rendered from a
// results.json: the SVG plot and the Markdown tables.
//
//	go run ./test/bench/report/benchplot -in bin/bench/results.json -svg docs/images/bench.svg > tables.md
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kraan-io/kraan-operator/test/bench/report"
)

func main() {
	in := flag.String("in", "bin/bench/results.json", "results.json written by `make bench`")
	svg := flag.String("svg", "bin/bench/bench.svg", "SVG file to write; empty writes none")
	flag.Parse()
	r, err := report.Read(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *svg != "" {
		if err := report.Plot(r, *svg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	report.Markdown(os.Stdout, r)
}
