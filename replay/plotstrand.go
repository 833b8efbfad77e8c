package replay

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PlotStranded writes a PNG of each GPU's stranded compute slices over time
// under one policy: one lane per GPU (global index), the line's height in
// its lane the slices stranded then, up to the most any GPU had.
func PlotStranded(path, title string, res *Result) error {
	top := 1
	for _, s := range res.StrandedOverTime {
		for _, pt := range s {
			top = max(top, pt.Slices)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = fmt.Sprintf("GPU (lane height = %d stranded slice(s))", top)
	p.X.Min, p.X.Max = 0, max(res.Makespan, 1)
	gpus := len(res.StrandedOverTime)
	p.Y.Min, p.Y.Max = -0.05, float64(max(gpus, 1))
	var ticks []plot.Tick
	every := max(1, gpus/16)
	for g := 0; g < gpus; g += every {
		ticks = append(ticks, plot.Tick{Value: float64(g), Label: fmt.Sprint(g)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	const fill = 0.85 // of a lane, so lanes do not touch
	for g, s := range res.StrandedOverTime {
		base := float64(g)
		var xys plotter.XYs
		prev := 0.0
		for _, pt := range s {
			y := base + fill*float64(pt.Slices)/float64(top)
			xys = append(xys, plotter.XY{X: pt.T, Y: prev}, plotter.XY{X: pt.T, Y: y})
			prev = y
		}
		xys = append(xys, plotter.XY{X: p.X.Max, Y: prev})
		if len(s) == 0 {
			xys = plotter.XYs{{X: 0, Y: base}, {X: p.X.Max, Y: base}}
		} else {
			xys[0].Y = base
		}
		floor, err := plotter.NewLine(plotter.XYs{{X: 0, Y: base}, {X: p.X.Max, Y: base}})
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		floor.Color = color.RGBA{220, 220, 220, 255}
		p.Add(floor)
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		l.Color = colour(g)
		l.Width = vg.Points(1)
		p.Add(l)
	}
	height := vg.Points(float64(max(300, min(1200, 40*gpus+120))))
	img := vgimg.New(vg.Points(1300), height)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	p.Draw(dc)
	return savePNG(img, path)
}
