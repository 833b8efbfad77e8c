package replay

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The reservation frontier: what the agent's reservation rule
// (--reserve-after, partitioner.Starving) buys in p95 start of the large
// requests and what it costs in mean JCT, one point per setting of its
// limit, on issue 28's configurations and seeds, with the baselines placed
// on the same axes. Every point replays the same streams, and the baselines
// are replayed once per configuration.

// FrontierPoint is one policy placed on the trade-off: a setting of the
// reservation rule in migpro's place (Baseline false) or a baseline.
type FrontierPoint struct {
	// Label names the point: "never" (the agent's default), the limit as
	// given ("30s", "2m"), a trial ("4x+large", frontier trials), or the
	// baseline's name.
	Label    string
	Strategy Strategy
	Baseline bool
	Rows     []FrontierRow
}

// FrontierRow is one configuration's figures of a point, each summed over
// the seeds before the ratio is taken.
type FrontierRow struct {
	Config, Node string
	GPUs         int
	// JCT is the point's mean JCT over the best dynamic baseline's
	// (first-fit, nvidia-dra, hami; below 1: the point is better).
	JCT float64
	// P95 and P95Static are, per size of TargetSizes that the stream asks
	// for, the point's p95 arrival-to-start over the best baseline's and
	// over static's.
	P95, P95Static map[string]float64
	// Target is the point's row of issue 28's targets (nil for a
	// baseline, which is what the targets are measured against).
	Target *TargetRow
	// seedJCT is the point's mean JCT per seed, and dynJCT each dynamic
	// baseline's (the pooled figure's jackknife).
	seedJCT []float64
	dynJCT  [][]float64
}

// SimulatorOnly reports whether the point is not the agent's own code: a
// baseline, or a trial the agent's rule lacks.
func (p FrontierPoint) SimulatorOnly() bool { return p.Baseline || p.Strategy.SimulatorOnly() }

// dynamicBaselines are the baselines that place on demand: the mean-JCT
// axis is against the best of them (static's mean JCT is 1.2-7.8× migpro's
// on these configurations, so it is never that bar).
var dynamicBaselines = []string{"first-fit", "nvidia-dra", "hami"}

// ParseFrontierPoints reads a comma-separated list of settings of the
// reservation rule, each "0" or "never" (no reservations: the agent's
// default), a limit as a Go duration ("30s", "2m": the agent's
// --reserve-after), or a trial that is simulator only: "Kx" (the limit is K
// times the mean run time finished so far), either with "+large" (only
// requests for more than half a GPU reserve), "+anynode" (nodes of fewer
// than partitioner.MinReserveGPUs GPUs reserve too), "+near" (only while
// a GPU has at most half its slices in use) and "+oracle" (the placement
// whose runs end first is held, as only the replay knows) appended to any
// limit.
func ParseFrontierPoints(list string) ([]FrontierPoint, error) {
	var out []FrontierPoint
	seen := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		label := strings.TrimSpace(f)
		head, mods, _ := strings.Cut(label, "+")
		s := Strategy{Name: "migpro", Kind: Migpro}
		switch {
		case head == "0" || head == "never":
			if mods != "" {
				return nil, fmt.Errorf("point %q: nothing to modify when nothing is reserved", label)
			}
			label = "never"
		case strings.HasSuffix(head, "x"):
			k, err := strconv.ParseFloat(strings.TrimSuffix(head, "x"), 64)
			if err != nil || !(k > 0) || k > 1000 {
				return nil, fmt.Errorf("point %q: want K times the mean run as Kx, K above 0", label)
			}
			s.Name, s.ReserveRunFactor = "migpro+reserve-after", k
		default:
			d, err := time.ParseDuration(head)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("point %q: want 0, never, a duration such as 30s or 2m, or Kx", label)
			}
			if d == 0 {
				return nil, fmt.Errorf("point %q: a limit of 0 reserves nothing; write 0 or never", label)
			}
			s.Name, s.ReserveAfter = "migpro+reserve-after", d.Seconds()
		}
		if mods != "" {
			for _, m := range strings.Split(mods, "+") {
				switch m {
				case "large":
					s.ReserveLarge = true
				case "anynode":
					s.ReserveAnyNode = true
				case "near":
					s.ReserveNearEmpty = true
				case "oracle":
					s.ReserveOracle = true
				default:
					return nil, fmt.Errorf("point %q: unknown trial %q (want large, anynode, near or oracle)", label, m)
				}
			}
		}
		if seen[label] {
			return nil, fmt.Errorf("point %q given twice", label)
		}
		seen[label] = true
		out = append(out, FrontierPoint{Label: label, Strategy: s})
	}
	return out, nil
}

// ForPods turns points of the reservation rule into the same points for
// pods (migpro/exact: exactly the profile asked for). The agent reserves
// only for local callers (agent/pending.go), so every point that reserves
// is simulator only; "never" stays the agent's pod default.
func ForPods(points []FrontierPoint) []FrontierPoint {
	out := make([]FrontierPoint, len(points))
	for i, p := range points {
		p.Strategy.Exact = true
		p.Strategy.Name = strings.Replace(p.Strategy.Name, "migpro", "migpro/exact", 1)
		out[i] = p
	}
	return out
}

// Frontier replays every configuration under each point and each baseline,
// every seed, and returns the points followed by the baselines, each with
// one row per configuration. progress, when set, is told each
// configuration as it starts.
func Frontier(confs []TargetConfig, seeds []uint64, points []FrontierPoint, progress func(string)) ([]FrontierPoint, error) {
	out := make([]FrontierPoint, 0, len(points)+len(TargetBaselines))
	for _, p := range points {
		out = append(out, FrontierPoint{Label: p.Label, Strategy: p.Strategy})
	}
	for _, name := range TargetBaselines {
		ps, err := ParsePolicies(name)
		if err != nil {
			return nil, fmt.Errorf("baseline %s: %w", name, err)
		}
		out = append(out, FrontierPoint{Label: name, Strategy: ps[0], Baseline: true})
	}
	for _, c := range confs {
		if progress != nil {
			progress(c.Name)
		}
		tc, err := newTargetCase(c, seeds)
		if err != nil {
			return nil, err
		}
		base, err := tc.baselines()
		if err != nil {
			return nil, err
		}
		for i := range out {
			var sums policySums
			if i < len(points) {
				if sums, err = tc.run(out[i].Strategy); err != nil {
					return nil, err
				}
			} else {
				sums = base[i-len(points)]
			}
			row := frontierRow(c.Name, sums, base, i < len(points))
			row.Node, row.GPUs = c.Node, tc.gpus
			out[i].Rows = append(out[i].Rows, row)
		}
	}
	return out, nil
}

// frontierRow places one policy's sums against the baselines'.
func frontierRow(config string, mine policySums, base []policySums, target bool) FrontierRow {
	row := FrontierRow{Config: config, P95: map[string]float64{}, P95Static: map[string]float64{}}
	bestJCT := 0.0
	for i, name := range TargetBaselines {
		if !slices.Contains(dynamicBaselines, name) {
			continue
		}
		if bestJCT == 0 || base[i].jct < bestJCT {
			bestJCT = base[i].jct
		}
		row.dynJCT = append(row.dynJCT, base[i].perSeed)
	}
	row.JCT = mine.jct / bestJCT
	row.seedJCT = mine.perSeed
	for _, size := range TargetSizes {
		if best, _ := bestP95(base, size); best > 0 && mine.p95[size] > 0 {
			row.P95[size] = mine.p95[size] / best
		}
		for i, name := range TargetBaselines {
			if v := base[i].p95[size]; name == "static" && v > 0 && mine.p95[size] > 0 {
				row.P95Static[size] = mine.p95[size] / v
			}
		}
	}
	if target {
		t := targetRow(config, mine, base)
		row.Target = &t
	}
	return row
}

// FrontierPooled is a point over every configuration: the geometric mean
// of each ratio over the rows that have it, and, for a setting of the
// rule, how many rows meet each of issue 28's targets.
type FrontierPooled struct {
	// JCT is the geometric mean of the rows' mean JCT ÷ best dynamic
	// baseline's, and JCTErr its jackknife standard error over the seeds
	// (each left out of every row in turn; 0 with one seed).
	JCT, JCTErr    float64
	P95, P95Static map[string]float64
	Rows           int
	// JCTMet, FragMet and P95Met count the rows meeting the mean-JCT,
	// fragmentation and p95 (4g and 7g) targets; P95Met7g the rows whose
	// 7g p95 alone is no worse than every baseline's (of P95Rows7g rows
	// with 7g requests). StepsPerJob is NVML steps per job pooled over
	// every run, and DRASteps nvidia-dra's.
	JCTMet, FragMet, P95Met, P95Met7g, P95Rows7g int
	StepsPerJob, DRASteps                        float64
}

// StaticBar reports whether the row is one of the generated streams on 2-8
// GPUs of one model: the rows where static's whole-GPU 7g instances set
// the 7g bar (docs/replay.md), and where reservations act (a node of fewer
// than partitioner.MinReserveGPUs GPUs never reserves).
func (r FrontierRow) StaticBar() bool {
	return strings.HasPrefix(r.Config, "online/") && !strings.Contains(r.Node, ",") && r.GPUs >= 2
}

// Pooled sums the point up over its rows.
func (p FrontierPoint) Pooled() FrontierPooled { return p.PooledOver(nil) }

// PooledOver sums the point up over the rows keep keeps (every row when
// keep is nil).
func (p FrontierPoint) PooledOver(keep func(FrontierRow) bool) FrontierPooled {
	rows := p.Rows
	if keep != nil {
		rows = nil
		for _, r := range p.Rows {
			if keep(r) {
				rows = append(rows, r)
			}
		}
	}
	out := FrontierPooled{P95: map[string]float64{}, P95Static: map[string]float64{}, Rows: len(rows)}
	geo := func(v func(FrontierRow) (float64, bool)) float64 {
		sum, n := 0.0, 0
		for _, r := range rows {
			if x, ok := v(r); ok && x > 0 {
				sum += math.Log(x)
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return math.Exp(sum / float64(n))
	}
	out.JCT = geo(func(r FrontierRow) (float64, bool) { return r.JCT, true })
	out.JCTErr = pooledJCTErr(rows)
	for _, size := range TargetSizes {
		out.P95[size] = geo(func(r FrontierRow) (float64, bool) { v, ok := r.P95[size]; return v, ok })
		out.P95Static[size] = geo(func(r FrontierRow) (float64, bool) { v, ok := r.P95Static[size]; return v, ok })
	}
	var steps, runs, draSteps, draRuns int
	for _, r := range rows {
		t := r.Target
		if t == nil {
			continue
		}
		if t.JCTMet() {
			out.JCTMet++
		}
		if t.Frag <= t.FirstFitFrag {
			out.FragMet++
		}
		if t.P95Met() {
			out.P95Met++
		}
		if v, ok := t.P95["7g"]; ok {
			out.P95Rows7g++
			if v <= 1 {
				out.P95Met7g++
			}
		}
		steps, runs, draSteps, draRuns = steps+t.StepCount, runs+t.RunCount, draSteps+t.DRAStepCount, draRuns+t.DRARunCount
	}
	if runs > 0 && draRuns > 0 {
		out.StepsPerJob, out.DRASteps = float64(steps)/float64(runs), float64(draSteps)/float64(draRuns)
	}
	return out
}

// pooledJCTErr is the jackknife standard error of the pooled mean-JCT
// ratio: the geometric mean over the rows recomputed with each seed left
// out of every row (the best dynamic baseline chosen anew each time). Zero
// with fewer than two seeds or rows without per-seed figures.
func pooledJCTErr(rows []FrontierRow) float64 {
	if len(rows) == 0 {
		return 0
	}
	n := len(rows[0].seedJCT)
	for _, r := range rows {
		if len(r.seedJCT) != n || len(r.dynJCT) == 0 {
			return 0
		}
	}
	if n < 2 {
		return 0
	}
	sum := func(v []float64, skip int) float64 {
		t := 0.0
		for i, x := range v {
			if i != skip {
				t += x
			}
		}
		return t
	}
	theta := make([]float64, n)
	for k := 0; k < n; k++ {
		logs := 0.0
		for _, r := range rows {
			best := math.Inf(1)
			for _, d := range r.dynJCT {
				best = math.Min(best, sum(d, k))
			}
			logs += math.Log(sum(r.seedJCT, k) / best)
		}
		theta[k] = math.Exp(logs / float64(len(rows)))
	}
	return jackknifeSE(theta)
}
