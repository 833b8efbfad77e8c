package replay

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Metrics users feel, per policy: how long a request waits from arrival to
// start, by its size (large requests starve first), and how many compute
// slices sit stranded: free, but in no free memory slots a profile could
// use beside the instances held.

// SizeWait is the arrival-to-start time of the jobs that asked for a
// profile of one size (compute slices, "4g") when their first run started,
// whatever instance served it (a static layout's larger idle instance, a
// larger or wider one the agent gives a caller that takes any instance
// holding its profile).
type SizeWait struct {
	Size string  `json:"size"`
	Jobs int     `json:"jobs"`
	Mean float64 `json:"meanSeconds"`
	P95  float64 `json:"p95Seconds"`
}

// FragmentedWait is one fragmentation wait: a request that had to wait on
// arrival although some GPU had the compute slices and memory slots for it.
// GPUs are those GPUs, each with the instances its runs held there: their
// placements left the request no legal one.
type FragmentedWait struct {
	Time    float64     `json:"timeSeconds"`
	Job     string      `json:"job"`
	Profile string      `json:"profile"`
	GPUs    []GPULayout `json:"gpus"`
}

// GPULayout is the instances held on one GPU (global index), each written
// profile@start and sorted, e.g. "3g.20gb@0".
type GPULayout struct {
	GPU       int      `json:"gpu"`
	Instances []string `json:"instances"`
}

// recordFragmented adds j's fragmentation wait with the layouts of gpus.
func (e *engine) recordFragmented(j *jobState, gpus []*gpuSlot) {
	w := FragmentedWait{Time: e.now, Job: j.job.ID, Profile: j.profile.Name}
	for _, gs := range gpus {
		l := GPULayout{GPU: gs.global}
		for r := range e.active {
			if r.slot == gs {
				l.Instances = append(l.Instances, fmt.Sprintf("%s@%d", r.g.profile.Name, r.g.placement.Start))
			}
		}
		sort.Strings(l.Instances)
		w.GPUs = append(w.GPUs, l)
	}
	e.res.FragmentedWaits = append(e.res.FragmentedWaits, w)
}

// strandTick adds the GPU's stranded slices since the last change to its
// sum; call it before the instances held there change.
func (e *engine) strandTick(g *gpuSlot) {
	m := g.model
	n := m.geo.Stranded(g.heldSlots, g.heldSlices, m.all)
	g.strandSum += float64(n) * (e.now - g.strandSince)
	g.recordStranded(g.strandSince, n)
	g.strandSince = e.now
}

// StrandPoint is a GPU's stranded compute slices from time T (seconds) on,
// until the next point.
type StrandPoint struct {
	T      float64 `json:"t"`
	Slices int     `json:"slices"`
}

// recordStranded notes that the GPU had n stranded slices from t on: a new
// point when n changes, the last point's count replaced when t is its time.
func (g *gpuSlot) recordStranded(t float64, n int) {
	s := g.strandSeries
	if k := len(s); k > 0 && s[k-1].T == t {
		s = s[:k-1]
	}
	if k := len(s); k > 0 && s[k-1].Slices == n {
		g.strandSeries = s
		return
	}
	g.strandSeries = append(s, StrandPoint{t, n})
}

// userMetrics fills StartWaits and Stranded once the run is over.
func (e *engine) userMetrics() {
	res := e.res
	by := map[string][]float64{}
	for _, j := range e.jobs {
		if !j.began {
			continue
		}
		size, _, _ := strings.Cut(j.firstProfile, ".")
		by[size] = append(by[size], j.startedAt-j.job.Arrival)
	}
	for size, w := range by {
		sum := 0.0
		for _, x := range w {
			sum += x
		}
		res.StartWaits = append(res.StartWaits, SizeWait{Size: size, Jobs: len(w), Mean: sum / float64(len(w)), P95: percentile(w, 0.95)})
	}
	sort.Slice(res.StartWaits, func(i, j int) bool { return sizeRank(res.StartWaits[i].Size) < sizeRank(res.StartWaits[j].Size) })
	for _, nd := range e.nodes {
		for _, g := range nd.gpus {
			e.strandTick(g)
			mean := 0.0
			if res.Makespan > 0 {
				mean = g.strandSum / res.Makespan
			}
			res.Stranded = append(res.Stranded, mean)
			res.StrandedOverTime = append(res.StrandedOverTime, g.strandSeries)
		}
	}
}

// sizeRank orders sizes "1g" < "2g" < … < "7g".
func sizeRank(s string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "g"))
	if err != nil {
		return 0 // an unknown size sorts first
	}
	return n
}

// StartWait is the start-wait figures of one size, and false when no job
// of that size started.
func (r *Result) StartWait(size string) (SizeWait, bool) {
	for _, w := range r.StartWaits {
		if w.Size == size {
			return w, true
		}
	}
	return SizeWait{}, false
}

// StrandedMean is the stranded compute slices of a GPU over the makespan,
// averaged over the GPUs.
func (r *Result) StrandedMean() float64 {
	if len(r.Stranded) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range r.Stranded {
		s += x
	}
	return s / float64(len(r.Stranded))
}

// WriteUserMetrics prints, per policy, the mean and p95 arrival-to-start
// time of each request size, NVML steps per job, fragmentation waits and
// the stranded slices per GPU (mean over time; the worst GPU's too).
func WriteUserMetrics(w io.Writer, results []*Result) error {
	sizes := map[string]bool{}
	for _, r := range results {
		for _, s := range r.StartWaits {
			sizes[s.Size] = true
		}
	}
	var order []string
	for s := range sizes {
		order = append(order, s)
	}
	sort.Slice(order, func(i, j int) bool { return sizeRank(order[i]) < sizeRank(order[j]) })
	head := []string{"policy"}
	for _, s := range order {
		head = append(head, s+" start mean/p95 s")
	}
	head = append(head, "steps/job", "frag waits", "stranded slices/GPU (worst)")
	rows := [][]string{head}
	for _, r := range results {
		row := []string{r.starred()}
		for _, s := range order {
			if sw, ok := r.StartWait(s); ok {
				row = append(row, fmt.Sprintf("%.0f / %.0f", sw.Mean, sw.P95))
			} else {
				row = append(row, "-")
			}
		}
		worst := 0.0
		for _, x := range r.Stranded {
			worst = max(worst, x)
		}
		row = append(row, fmt.Sprintf("%.2f", r.StepsPerJob()), fmt.Sprint(r.Fragmented), fmt.Sprintf("%.2f (%.2f)", r.StrandedMean(), worst))
		rows = append(rows, row)
	}
	return writeRows(w, rows)
}

// writeRows prints rows as aligned columns: the first left-aligned, the
// rest right-aligned.
func writeRows(w io.Writer, rows [][]string) error {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}
