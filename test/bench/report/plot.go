package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of the systems, the same in both panels.
var (
	rawColour      = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	operatorColour = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	sdkColour      = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	hwmColour      = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
)

// Plot renders two panels side by side into the file at path, in the
// format its extension names (svg; png for a quick look): the time
// to all-Ready against the number of releases (raw limit, operator,
// sequential Helm SDK floor, whose extrapolated points are ringed and
// named so in the legend) and the operator's RSS against the number of
// releases (peak and when all were Ready).
func Plot(r Results, path string) error {
	if len(r.Sizes) == 0 {
		return errors.New("no release counts measured: nothing to plot")
	}
	sizes := append([]Size(nil), r.Sizes...)
	sort.Slice(sizes, func(i, j int) bool { return sizes[i].Releases < sizes[j].Releases })
	timePlot, err := timePanel(sizes)
	if err != nil {
		return err
	}
	rssPlot, err := rssPanel(sizes)
	if err != nil {
		return err
	}
	for _, p := range []*plot.Plot{timePlot, rssPlot} {
		// Room around the points, so that none sits on the frame.
		p.X.Max *= 1.05
		p.Y.Max *= 1.1
	}
	logTime(timePlot, sizes)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 3, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8,
		PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	return drawTo(path, 11*vg.Inch, 4.5*vg.Inch, func(c draw.Canvas) {
		canvases := plot.Align([][]*plot.Plot{{timePlot, rssPlot}}, tiles, c)
		timePlot.Draw(canvases[0][0])
		rssPlot.Draw(canvases[0][1])
	})
}

// drawTo draws a w × h image with drawing and writes it to path, in the
// format its extension names (svg; png for a quick look), creating its
// directory.
func drawTo(path string, w, h vg.Length, drawing func(draw.Canvas)) error {
	img, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return err
	}
	drawing(draw.New(img))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func timePanel(sizes []Size) (*plot.Plot, error) {
	p := newPanel("Time to all Ready", "seconds")
	raw, op, sdk := make(plotter.XYs, 0, len(sizes)), make(plotter.XYs, 0, len(sizes)), make(plotter.XYs, 0, len(sizes))
	var sdkExtra plotter.XYs
	for _, s := range sizes {
		x := float64(s.Releases)
		raw = append(raw, plotter.XY{X: x, Y: s.Raw.Seconds})
		op = append(op, plotter.XY{X: x, Y: s.Operator.Seconds})
		sdk = append(sdk, plotter.XY{X: x, Y: s.SDK.Seconds})
		if s.SDK.Extrapolated {
			sdkExtra = append(sdkExtra, plotter.XY{X: x, Y: s.SDK.Seconds})
		}
	}
	if err := addSeries(p, "raw limit (server-side apply, 4 appliers)", raw, rawColour, false); err != nil {
		return nil, err
	}
	if err := addSeries(p, "kraan-operator", op, operatorColour, false); err != nil {
		return nil, err
	}
	if err := addSeries(p, "sequential Helm SDK (floor)", sdk, sdkColour, true); err != nil {
		return nil, err
	}
	if len(sdkExtra) > 0 {
		hollow, err := plotter.NewScatter(sdkExtra)
		if err != nil {
			return nil, err
		}
		hollow.Shape = draw.RingGlyph{}
		hollow.Color = sdkColour
		hollow.Radius = vg.Points(6)
		p.Add(hollow)
		p.Legend.Add("sequential Helm SDK: extrapolated", hollow)
	}
	return p, nil
}

// logTime puts the time axis on a log scale: the sequential floor is an
// order of magnitude above the others, which a linear axis would squash
// together. Times of 0 (a failed run) keep it linear.
func logTime(p *plot.Plot, sizes []Size) {
	least := p.Y.Max
	for _, s := range sizes {
		for _, v := range []float64{s.Raw.Seconds, s.Operator.Seconds, s.SDK.Seconds} {
			if v <= 0 {
				return
			}
			least = min(least, v)
		}
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = oneTwoFive{}
	p.Y.Min, p.Y.Max = least/1.5, p.Y.Max*1.5
	p.Title.Text += " (log scale)"
}

func rssPanel(sizes []Size) (*plot.Plot, error) {
	p := newPanel("Operator memory", "MiB")
	peak, ready, idle := make(plotter.XYs, 0, len(sizes)), make(plotter.XYs, 0, len(sizes)), make(plotter.XYs, 0, len(sizes))
	for _, s := range sizes {
		x := float64(s.Releases)
		peak = append(peak, plotter.XY{X: x, Y: s.Operator.PeakRSSMiB})
		ready = append(ready, plotter.XY{X: x, Y: s.Operator.ReadyRSSMiB})
		idle = append(idle, plotter.XY{X: x, Y: s.Operator.IdleRSSMiB})
	}
	if err := addSeries(p, "peak RSS (VmHWM)", peak, hwmColour, false); err != nil {
		return nil, err
	}
	if err := addSeries(p, "RSS when all Ready (VmRSS)", ready, operatorColour, false); err != nil {
		return nil, err
	}
	if err := addSeries(p, "RSS Deployed and idle 30 s later", idle, rawColour, false); err != nil {
		return nil, err
	}
	return p, nil
}

func newPanel(title, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "HelmReleases"
	p.Y.Label.Text = unit
	p.X.Min, p.Y.Min = 0, 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// addSeries adds a line with points; dashed lines mark floors.
func addSeries(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	line.Color, points.Color = c, c
	line.Width = vg.Points(1.5)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	points.Shape = draw.CircleGlyph{}
	p.Add(line, points)
	p.Legend.Add(name, line, points)
	return nil
}

// oneTwoFive labels a log axis at 1, 2 and 5 times the powers of ten:
// plot.LogTicks labels powers of ten only, often one label or none over the
// range of a bench.
type oneTwoFive struct{}

// Ticks returns the 1-2-5 ticks between lo and hi.
func (oneTwoFive) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for decade := math.Pow(10, math.Floor(math.Log10(lo))); decade <= hi; decade *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * decade; v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ticks
}
