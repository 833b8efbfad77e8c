package replay

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// OpenB pod lists. The OpenB trace (a GPU-sharing production cluster's
// pods; the user gives the file) lists each pod's GPU count, its share of
// one GPU in thousandths (gpu_milli, for sharing pods) and when it was
// created, scheduled and deleted. Replayed on MIG:
//
//   - a sharing pod (one GPU, gpu_milli below 1000) asks for the smallest
//     profile whose compute slices cover its share: ceil(gpu_milli × S /
//     1000) slices of the S on the GPU (460 on an A100 is 4 slices, so
//     4g.20gb);
//   - a whole-GPU pod asks for the GPU's full profile;
//   - a pod of k GPUs becomes k whole-GPU jobs arriving together (the
//     simulator does not start them as a gang);
//   - pods without a GPU are left out;
//   - a job runs for the pod's life once scheduled (deletion − scheduled
//     time) on whatever instance it gets (memory-bound: no speed-up from
//     more slices), holding half its profile's memory, so it never runs out;
//   - arrivals are creation times, from the window's first pod.

// openbColumns are the columns that mark a CSV file as an OpenB pod list.
var openbColumns = []string{"num_gpu", "gpu_milli", "creation_time", "deletion_time"}

// OpenBPod is one GPU pod of an OpenB pod list.
type OpenBPod struct {
	Name                        string
	GPUs                        int
	Milli                       int
	Created, Scheduled, Deleted float64
}

// isOpenB reports whether a header is an OpenB pod list's.
func isOpenB(header []string) bool {
	have := map[string]bool{}
	for _, h := range header {
		have[strings.ToLower(strings.TrimSpace(h))] = true
	}
	for _, c := range openbColumns {
		if !have[c] {
			return false
		}
	}
	return true
}

// ReadOpenB reads the GPU pods of an OpenB pod list, in creation order.
func ReadOpenB(r io.Reader) ([]OpenBPod, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("openb: header: %w", err)
	}
	if !isOpenB(header) {
		return nil, fmt.Errorf("openb: header lacks %s", strings.Join(openbColumns, ", "))
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	var pods []OpenBPod
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("openb: %w", err)
		}
		line, _ := cr.FieldPos(0)
		p, ok, err := openbRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("openb line %d: %w", line, err)
		}
		if ok {
			pods = append(pods, p)
		}
		if len(pods) > maxCSVJobs {
			return nil, fmt.Errorf("openb: more than %d GPU pods", maxCSVJobs)
		}
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("openb: no GPU pods")
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].Created < pods[j].Created })
	return pods, nil
}

// openbRow parses one row; ok is false for a pod without a GPU or one that
// never ran.
func openbRow(rec []string, col map[string]int) (OpenBPod, bool, error) {
	get := func(c string) string {
		if i, ok := col[c]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	num := func(c string) (float64, error) {
		s := get(c)
		if s == "" {
			return 0, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("%s %q is not a number ≥ 0", c, s)
		}
		return v, nil
	}
	p := OpenBPod{Name: get("name")}
	vals := map[string]*float64{"creation_time": &p.Created, "scheduled_time": &p.Scheduled, "deletion_time": &p.Deleted}
	for c, dst := range vals {
		v, err := num(c)
		if err != nil {
			return p, false, err
		}
		*dst = v
	}
	g, err := num("num_gpu")
	if err != nil {
		return p, false, err
	}
	m, err := num("gpu_milli")
	if err != nil {
		return p, false, err
	}
	if g > 64 || m > 1000 || g != math.Trunc(g) {
		return p, false, fmt.Errorf("num_gpu %v or gpu_milli %v out of range (0-64, 0-1000)", g, m)
	}
	p.GPUs, p.Milli = int(g), int(m)
	if p.Scheduled < p.Created {
		p.Scheduled = p.Created
	}
	if p.Name == "" {
		return p, false, fmt.Errorf("name is empty")
	}
	return p, p.GPUs > 0 && p.Deleted > p.Scheduled, nil
}

// OpenBProfile is the profile a pod asks for on model m (see the package
// comment above): the smallest profile covering a sharing pod's share, the
// full profile for a whole GPU.
func OpenBProfile(m *Model, p OpenBPod) Profile {
	if p.GPUs != 1 || p.Milli <= 0 || p.Milli >= 1000 {
		return m.Full
	}
	need := (p.Milli*m.Slices + 999) / 1000
	best := m.Full
	for _, pr := range m.Profiles {
		if pr.Slices >= need && (pr.Slices < best.Slices || (pr.Slices == best.Slices && pr.Memory < best.Memory)) {
			best = pr
		}
	}
	return best
}

// OpenBJobs turns pods into jobs on model m. spec.Jobs > 0 picks a window
// of that many GPU pods, starting where spec.Seed draws; spec.Load > 0
// rescales the arrivals so the work offered is that share of what
// spec.GPUs GPUs' slices serve (1: as fast as they can). It returns the
// jobs and where the window starts.
func OpenBJobs(pods []OpenBPod, m *Model, spec MixSpec) ([]Job, int, error) {
	from, n := 0, len(pods)
	if spec.Jobs > 0 && spec.Jobs < len(pods) {
		n = spec.Jobs
		from = rand.New(rand.NewPCG(spec.Seed, 0x0be1)).IntN(len(pods) - n + 1)
	}
	window := pods[from : from+n]
	t0 := window[0].Created
	var jobs []Job
	for _, p := range window {
		pr := OpenBProfile(m, p)
		k := max(p.GPUs, 1)
		for i := range k {
			id := p.Name
			if k > 1 {
				id = fmt.Sprintf("%s/%d", p.Name, i)
			}
			jobs = append(jobs, Job{ID: id, Key: p.Name, Arrival: p.Created - t0, FullRuntime: p.Deleted - p.Scheduled,
				Scaling: 0, Mem: Fixed(pr.Memory / 2), Declared: pr.Memory / 2, Profile: pr.Name})
		}
	}
	if spec.Load > 0 {
		if spec.GPUs < 1 {
			return nil, 0, fmt.Errorf("openb: --load needs the cluster's GPU count")
		}
		work, span := 0.0, jobs[len(jobs)-1].Arrival
		for i := range jobs {
			work += m.MinSliceSeconds(&jobs[i])
		}
		if span <= 0 {
			return nil, 0, fmt.Errorf("openb: the window's pods all arrive at once; --load cannot spread them")
		}
		offered := work / (span * float64(m.Slices*spec.GPUs))
		f := offered / spec.Load
		for i := range jobs {
			jobs[i].Arrival = round(jobs[i].Arrival * f)
		}
	}
	return jobs, from, nil
}

// ReadJobs reads a CSV of jobs: an OpenB pod list (told by its header)
// becomes jobs on model m through OpenBJobs, anything else is read as
// ReadCSV's format. what describes the workload for reports.
func ReadJobs(r io.Reader, m *Model, spec MixSpec) (jobs []Job, what string, err error) {
	br := bufio.NewReader(r)
	first, _ := br.Peek(4096)
	line, _, _ := strings.Cut(string(first), "\n")
	if !isOpenB(strings.Split(strings.TrimSpace(line), ",")) {
		jobs, err = ReadCSV(br)
		return jobs, fmt.Sprintf("%d jobs", len(jobs)), err
	}
	pods, err := ReadOpenB(br)
	if err != nil {
		return nil, "", err
	}
	jobs, from, err := OpenBJobs(pods, m, spec)
	if err != nil {
		return nil, "", err
	}
	what = fmt.Sprintf("OpenB pod list, %d GPU pods from pod %d of %d (seed %d), %d jobs", min(max(spec.Jobs, 0), len(pods)), from, len(pods), spec.Seed, len(jobs))
	if spec.Jobs <= 0 || spec.Jobs >= len(pods) {
		what = fmt.Sprintf("OpenB pod list, all %d GPU pods, %d jobs", len(pods), len(jobs))
	}
	if spec.Load > 0 {
		what += fmt.Sprintf(", arrivals scaled to load %g", spec.Load)
	}
	return jobs, what, nil
}
