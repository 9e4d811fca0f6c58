// Package helmcharts holds the charts of the chart-backed APIs listed in
// watches.yaml, one directory per chart, and the tests that render them with
// the Helm SDK and check their values schemas against the CRDs.
package helmcharts
