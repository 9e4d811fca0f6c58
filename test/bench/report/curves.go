package report

import (
	"errors"
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// CurveSteps is how many points a curve has: one per twentieth of the
// releases.
const CurveSteps = 20

// sizeColours tell the sizes apart in the curves' plot, smallest first.
var sizeColours = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// PlotCurves renders the waves of the sizes that carry curves into the file
// at path (svg, or png): the share of the releases done (Deployments
// Available, raw; HelmReleases Ready, operator) against the time since the
// first was created, in units of that size's raw time, so that every size
// fits one panel: where the operator's line runs left of the raw one it is
// ahead of the cluster's own backlog, where it ends right of 1 it is slower.
func PlotCurves(r Results, path string) error {
	sizes := make([]Size, 0, len(r.Sizes))
	for _, s := range r.Sizes {
		if len(s.Raw.Curve) > 0 && len(s.Operator.Curve) > 0 && s.Raw.Seconds > 0 {
			sizes = append(sizes, s)
		}
	}
	if len(sizes) == 0 {
		return errors.New("no size carries curves: nothing to plot")
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i].Releases < sizes[j].Releases })
	// newPanel's legend sits top left: a wave is never done early, so its
	// lines stay clear of it.
	p := newPanel("Install waves: Deployments Available (raw, dashed), HelmReleases Ready (operator)", "% done")
	p.X.Label.Text = "time since the first release was created, in units of the raw time of the size"
	p.Y.Max = 100
	for i, s := range sizes {
		c := sizeColours[i%len(sizeColours)]
		if err := addSeries(p, fmt.Sprintf("raw, %d", s.Releases), curvePoints(s.Raw.Curve, s.Raw.Seconds), c, true); err != nil {
			return err
		}
		if err := addSeries(p, fmt.Sprintf("kraan-operator, %d", s.Releases), curvePoints(s.Operator.Curve, s.Raw.Seconds), c, false); err != nil {
			return err
		}
	}
	p.X.Max *= 1.05
	return drawTo(path, 8*vg.Inch, 5*vg.Inch, func(c draw.Canvas) { p.Draw(c) })
}

// curvePoints turns a curve (the seconds until each twentieth was done)
// into points of the share done against the time in units of unit seconds,
// starting at nothing done.
func curvePoints(curve []float64, unit float64) plotter.XYs {
	xys := make(plotter.XYs, 1, 1+len(curve)) // starting at nothing done
	for i, sec := range curve {
		xys = append(xys, plotter.XY{X: sec / unit, Y: 100 * float64(i+1) / CurveSteps})
	}
	return xys
}
