package replay

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PlotFrontier writes a PNG of the frontier in two panels, pooled over
// every configuration and over the rows where static sets the 7g bar
// (FrontierRow.StaticBar): each point's 7g p95 start ÷ the best baseline's
// across, its mean JCT ÷ the best dynamic baseline's up. The settings of
// the agent's rule are joined by a line from the shortest limit to never,
// and each family of trials (simulator only, marked *) by its own line;
// the baselines (simulator only) stand alone. The dashed lines are the
// targets: the 7g p95 at 1 and mean JCT within 1%.
func PlotFrontier(path, title string, points []FrontierPoint) error {
	if len(points) == 0 {
		return fmt.Errorf("plot frontier: no points")
	}
	all, err := frontierPanel("every configuration", points, nil)
	if err != nil {
		return err
	}
	bar, err := frontierPanel("2-8 GPUs of one model (static sets the 7g bar)", points, FrontierRow.StaticBar)
	if err != nil {
		return err
	}
	img := vgimg.New(vg.Points(1500), vg.Points(640))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	head := plot.New()
	head.Title.Text = title
	head.Title.TextStyle.Font.Size = vg.Points(15)
	head.HideAxes()
	head.Draw(draw.Crop(dc, 0, 0, dc.Max.Y-dc.Min.Y-vg.Points(28), 0))
	body := draw.Crop(dc, 0, 0, 0, -vg.Points(28))
	plots := [][]*plot.Plot{{all, bar}}
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align(plots, tiles, body)
	all.Draw(canvases[0][0])
	bar.Draw(canvases[0][1])
	return savePNG(img, path)
}

// frontierPanel is one panel of PlotFrontier, pooled over the rows keep
// keeps.
func frontierPanel(title string, points []FrontierPoint, keep func(FrontierRow) bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "7g p95 arrival-to-start ÷ best baseline's (geometric mean over configurations)"
	p.Y.Label.Text = "mean JCT ÷ best dynamic baseline's"
	var agent, base plotter.XYs
	var agentL, baseL []string
	trials := map[string]plotter.XYs{}
	trialL := map[string][]string{}
	var families []string
	xmin, xmax, ymin, ymax := 1.0, 1.0, 1.0, 1.01
	for _, pt := range byLimit(points) {
		q := pt.PooledOver(keep)
		xy := plotter.XY{X: q.P95["7g"], Y: q.JCT}
		xmin, xmax, ymin, ymax = min(xmin, xy.X), max(xmax, xy.X), min(ymin, xy.Y), max(ymax, xy.Y)
		label := star(pt.Label, pt.SimulatorOnly())
		switch {
		case pt.Baseline:
			base, baseL = append(base, xy), append(baseL, label)
		case pt.SimulatorOnly():
			f := trialFamily(pt)
			if _, ok := trials[f]; !ok {
				families = append(families, f)
			}
			trials[f], trialL[f] = append(trials[f], xy), append(trialL[f], label)
		default:
			agent, agentL = append(agent, xy), append(agentL, label)
		}
	}
	padX, padY := 0.08*(xmax-xmin)+0.01, 0.08*(ymax-ymin)+0.005
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xmin-padX, xmax+padX, ymin-padY, ymax+padY
	for _, ref := range []plotter.XYs{{{X: 1, Y: p.Y.Min}, {X: 1, Y: p.Y.Max}}, {{X: p.X.Min, Y: 1.01}, {X: p.X.Max, Y: 1.01}}} {
		l, err := plotter.NewLine(ref)
		if err != nil {
			return nil, fmt.Errorf("plot frontier: %w", err)
		}
		l.Color = color.Gray{Y: 120}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(l)
	}
	add := func(xys plotter.XYs, labels []string, name string, c color.Color, shape draw.GlyphDrawer, joined bool) error {
		if len(xys) == 0 {
			return nil
		}
		if joined {
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return fmt.Errorf("plot frontier: %w", err)
			}
			l.Color, s.Color, s.Shape, s.Radius = c, c, shape, vg.Points(4)
			p.Add(l, s)
			p.Legend.Add(name, l, s)
		} else {
			s, err := plotter.NewScatter(xys)
			if err != nil {
				return fmt.Errorf("plot frontier: %w", err)
			}
			s.Color, s.Shape, s.Radius = c, shape, vg.Points(5)
			p.Add(s)
			p.Legend.Add(name, s)
		}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return fmt.Errorf("plot frontier: %w", err)
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Font.Size = vg.Points(10)
		}
		lab.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(3)}
		p.Add(lab)
		return nil
	}
	if err := add(agent, agentL, "migpro, reserve after (the agent's rule)", colour(0), draw.CircleGlyph{}, true); err != nil {
		return nil, err
	}
	for i, f := range families {
		if err := add(trials[f], trialL[f], "trial "+f+" (simulator only)", colour(3+i), draw.TriangleGlyph{}, len(trials[f]) > 1); err != nil {
			return nil, err
		}
	}
	if err := add(base, baseL, "baselines (simulator only)", colour(2), draw.BoxGlyph{}, false); err != nil {
		return nil, err
	}
	p.Add(plotter.NewGrid())
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	return p, nil
}

// trialFamily names a trial's family, its label without the limit:
// "Kx+large" for 4x+large, "+near" for 30m+near; a family is joined by a
// line, by limit.
func trialFamily(p FrontierPoint) string {
	_, mods, _ := strings.Cut(p.Label, "+")
	f := "limit"
	if p.Strategy.ReserveRunFactor > 0 {
		f = "Kx"
	}
	if mods != "" {
		f += "+" + mods
	}
	return f
}

// byLimit is the points with the settings of the agent's rule sorted by
// their limit, never last, and the others after them as given.
func byLimit(points []FrontierPoint) []FrontierPoint {
	out := append([]FrontierPoint(nil), points...)
	limit := func(p FrontierPoint) float64 {
		switch {
		case p.Baseline:
			return math.Inf(1)
		case p.Strategy.ReserveRunFactor > 0:
			return p.Strategy.ReserveRunFactor // trials: within their family
		case p.Strategy.ReserveAfter == 0:
			return math.MaxFloat64
		}
		return p.Strategy.ReserveAfter
	}
	sort.SliceStable(out, func(i, j int) bool { return limit(out[i]) < limit(out[j]) })
	return out
}
