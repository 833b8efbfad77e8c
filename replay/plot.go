package replay

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// metric is one bar panel of the policies chart.
type metric struct {
	title string
	value func(*Result) float64
}

var metrics = []metric{
	{"makespan (s)", func(r *Result) float64 { return r.Makespan }},
	{"makespan ÷ lower bound", func(r *Result) float64 { return r.Ratio }},
	{"throughput (jobs/s)", func(r *Result) float64 { return r.Throughput }},
	{"mean JCT (s)", func(r *Result) float64 { return r.MeanJCT }},
	{"p95 JCT (s)", func(r *Result) float64 { return r.P95JCT }},
	{"GPU memory utilisation (%)", func(r *Result) float64 { return 100 * r.MemUtil }},
	{"reconfigurations", func(r *Result) float64 { return float64(r.Reconfigs) }},
	{"work lost to restarts (s)", func(r *Result) float64 { return r.LostWork }},
}

// PlotPolicies writes a PNG with one bar chart per metric, one bar per
// policy, under a title naming the workload.
func PlotPolicies(path, title string, results []*Result) error {
	if len(results) == 0 {
		return fmt.Errorf("plot: no results")
	}
	const rows, cols = 2, 4
	names := make([]string, len(results))
	only := false
	for i, r := range results {
		names[i], only = r.starred(), only || r.SimulatorOnly()
	}
	if only {
		title += " (* simulator only)"
	}
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for k, m := range metrics {
		p := plot.New()
		p.Title.Text = m.title
		p.Title.TextStyle.Font.Size = vg.Points(13)
		vals := make(plotter.Values, len(results))
		for i, r := range results {
			vals[i] = m.value(r)
		}
		for i := range results {
			one := make(plotter.Values, len(results))
			one[i] = vals[i]
			bars, err := plotter.NewBarChart(one, vg.Points(18))
			if err != nil {
				return fmt.Errorf("plot %s: %w", m.title, err)
			}
			bars.Color = colour(i)
			bars.LineStyle.Width = 0
			p.Add(bars)
		}
		p.NominalX(names...)
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YTop
		p.X.Tick.Label.Font.Size = vg.Points(10)
		p.Y.Min = 0
		top := 0.0
		for _, v := range vals {
			top = max(top, v)
		}
		p.Y.Max = 1.12 * top
		if top == 0 {
			p.Y.Max = 1
		}
		p.Add(plotter.NewGrid())
		plots[k/cols][k%cols] = p
	}
	img := vgimg.New(vg.Points(1400), vg.Points(760))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	head := plot.New()
	head.Title.Text = title
	head.Title.TextStyle.Font.Size = vg.Points(16)
	head.HideAxes()
	top := draw.Crop(dc, 0, 0, dc.Max.Y-dc.Min.Y-vg.Points(30), 0)
	head.Draw(top)
	body := draw.Crop(dc, 0, 0, 0, -vg.Points(30))
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(14),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align(plots, tiles, body)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	return savePNG(img, path)
}

func savePNG(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return f.Close()
}

// PlotTimeline writes a PNG of one GPU's layout over time under one policy:
// each run is a box spanning its memory slots and its run time, coloured by
// profile; the NVML wait before it is a light box, and a run killed by an
// OOM (red edge) or moved by the predictor (black edge) is outlined.
func PlotTimeline(path, title string, res *Result, gpu, slots int) error {
	var runs []RunRecord
	for _, r := range res.Runs {
		if r.GPU == gpu {
			runs = append(runs, r)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "memory slot"
	p.Y.Min, p.Y.Max = 0, float64(slots)
	p.X.Min = 0
	var ticks []plot.Tick
	for s := 0; s <= slots; s++ {
		ticks = append(ticks, plot.Tick{Value: float64(s), Label: fmt.Sprint(s)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	colours := profileColours(runs)
	var xmax float64
	for _, r := range runs {
		xmax = max(xmax, r.Ended)
		lo, hi := float64(r.Start)+0.06, float64(r.Start+r.Slots)-0.06
		if r.Started > r.Granted {
			wait, err := box(r.Granted, r.Started, lo, hi, color.RGBA{200, 200, 200, 255}, nil)
			if err != nil {
				return err
			}
			p.Add(wait)
		}
		var edge color.Color
		switch r.Outcome {
		case OOM:
			edge = color.RGBA{220, 0, 0, 255}
		case Marked:
			edge = color.Black
		}
		b, err := box(r.Started, r.Ended, lo, hi, colours[r.Profile], edge)
		if err != nil {
			return err
		}
		p.Add(b)
	}
	p.X.Max = max(xmax, 1)
	var profs []string
	for name := range colours {
		profs = append(profs, name)
	}
	sort.Slice(profs, func(i, j int) bool { return profileOrder(profs[i]) < profileOrder(profs[j]) })
	for _, name := range profs {
		legend, _ := box(0, 0, 0, 0, colours[name], nil)
		p.Legend.Add(name, legend)
	}
	legendWait, _ := box(0, 0, 0, 0, color.RGBA{200, 200, 200, 255}, nil)
	p.Legend.Add("NVML create/destroy", legendWait)
	oom, _ := box(0, 0, 0, 0, color.White, color.RGBA{220, 0, 0, 255})
	p.Legend.Add("killed by OOM", oom)
	marked, _ := box(0, 0, 0, 0, color.White, color.Black)
	p.Legend.Add("moved by predictor", marked)
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.XOffs = vg.Points(150)
	p.Legend.TextStyle.Font.Size = vg.Points(12)
	img := vgimg.New(vg.Points(1300), vg.Points(420))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	p.Draw(draw.Crop(dc, 0, -vg.Points(150), 0, 0))
	return savePNG(img, path)
}

func box(x0, x1, y0, y1 float64, fill, edge color.Color) (*plotter.Polygon, error) {
	pg, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	pg.Color = fill
	pg.Width = vg.Points(0.6)
	pg.LineStyle.Color = color.White
	if edge != nil {
		pg.Width = vg.Points(2)
		pg.LineStyle.Color = edge
	}
	return pg, nil
}

// palette is ten colours that stay apart in print and for common colour
// blindness (Tableau 10).
var palette = []color.RGBA{
	{78, 121, 167, 255}, {242, 142, 43, 255}, {225, 87, 89, 255}, {118, 183, 178, 255}, {89, 161, 79, 255},
	{237, 201, 72, 255}, {176, 122, 161, 255}, {255, 157, 167, 255}, {156, 117, 95, 255}, {186, 176, 172, 255},
}

func colour(i int) color.Color { return palette[i%len(palette)] }

// profileColours gives each profile a colour, the same for the same name on
// every chart of a run.
func profileColours(runs []RunRecord) map[string]color.Color {
	out := map[string]color.Color{}
	for _, r := range runs {
		out[r.Profile] = nil
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return profileOrder(names[i]) < profileOrder(names[j]) })
	for i, n := range names {
		out[n] = colour(i)
	}
	return out
}

// profileOrder sorts "1g.5gb" before "1g.10gb" before "2g.10gb".
func profileOrder(name string) float64 {
	var g, mem float64
	fmt.Sscanf(strings.Replace(name, "g.", " ", 1), "%g %g", &g, &mem)
	return g*1000 + mem
}

// PlotAll writes policies.png and, for every policy, a timeline of GPU gpu
// and a chart of each GPU's stranded slices over time, into dir; it returns
// the files written.
func PlotAll(dir, title string, results []*Result, gpu, slots int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var files []string
	path := filepath.Join(dir, "policies.png")
	if err := PlotPolicies(path, title, results); err != nil {
		return nil, err
	}
	files = append(files, path)
	for _, r := range results {
		name := strings.NewReplacer("/", "-", "+", "-", ":", "-").Replace(r.Policy)
		path := filepath.Join(dir, "timeline-"+name+".png")
		label := r.Policy
		if r.SimulatorOnly() {
			label += " (simulator only)"
		}
		t := fmt.Sprintf("%s — GPU %d layout over time (%s)", label, gpu, title)
		if err := PlotTimeline(path, t, r, gpu, slots); err != nil {
			return nil, err
		}
		files = append(files, path)
		path = filepath.Join(dir, "stranded-"+name+".png")
		t = fmt.Sprintf("%s — each GPU's stranded compute slices over time (%s)", label, title)
		if err := PlotStranded(path, t, r); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	return files, nil
}
