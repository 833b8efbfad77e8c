package record

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/migpro/migpro/predictor/trace"
	"github.com/migpro/migpro/telemetry/wire"
)

// Row is one sample of a recording: every source's latest figures at T.
type Row struct {
	// T is seconds since the command started.
	T float64
	// Source is what made the row: "shim" (a shim sample arrived) or
	// "nvml" (a poll).
	Source string
	// ShimBytes is the shim's live bytes summed over the command's
	// processes; ShimPeak the sum of their peaks (the peak itself when one
	// process allocates).
	ShimBytes, ShimPeak uint64
	// Allocs and Frees are the driver allocation and free calls so far.
	Allocs, Frees uint64
	// Processes is how many of the command's processes the shim has heard
	// from and that have not exited.
	Processes int
	// NVMLProcess is the memory NVML charges the command's processes;
	// NVMLDevice the used memory of the devices they run on.
	NVMLProcess, NVMLDevice uint64
}

// Used is the trace's used_bytes: max(shim, NVML), the agent's rule.
func (r Row) Used() uint64 { return max(r.ShimBytes, r.NVMLProcess) }

type procState struct {
	seq                          uint64
	current, peak, allocs, frees uint64
	exited                       bool
}

// collector turns shim samples and NVML polls into rows.
type collector struct {
	start time.Time
	procs map[uint32]*procState
	last  Row
	rows  []Row
}

func newCollector(start time.Time) *collector {
	return &collector{start: start, procs: map[uint32]*procState{}}
}

func (c *collector) shim(s stamped) {
	p := c.procs[s.m.PID]
	if p == nil {
		p = &procState{}
		c.procs[s.m.PID] = p
	}
	if p.exited || s.m.Seq <= p.seq {
		return // stale or after the exit sample
	}
	p.seq, p.current, p.peak, p.allocs, p.frees = s.m.Seq, s.m.Current, s.m.Peak, s.m.Allocs, s.m.Frees
	row := c.last
	row.Source = "shim"
	row.ShimBytes, row.ShimPeak, row.Allocs, row.Frees, row.Processes = 0, 0, 0, 0, 0
	for _, q := range c.procs {
		row.ShimBytes += q.current
		row.ShimPeak += q.peak
		row.Allocs += q.allocs
		row.Frees += q.frees
		if !q.exited {
			row.Processes++
		}
	}
	c.add(row, s.at)
	if s.m.Flags&wire.FlagExit != 0 {
		// The driver frees what an exiting process held.
		p.exited, p.current = true, 0
		c.last.ShimBytes -= s.m.Current
		c.last.Processes--
	}
}

func (c *collector) poll(src Source, root int, res *Result) {
	proc, dev, err := src.Sample(root)
	at := time.Now()
	if err != nil {
		res.NVMLErrors++
		if res.NVMLFirstError == nil {
			res.NVMLFirstError = err
		}
		return
	}
	row := c.last
	row.Source = "nvml"
	row.NVMLProcess, row.NVMLDevice = proc, dev
	c.add(row, at)
}

func (c *collector) add(row Row, at time.Time) {
	row.T = at.Sub(c.start).Seconds()
	if n := len(c.rows); n > 0 && row.T < c.rows[n-1].T {
		row.T = c.rows[n-1].T
	}
	c.rows = append(c.rows, row)
	c.last = row
}

// Trace is the recording in predictor/trace's format: used_bytes,
// requested_bytes (the shim's live bytes) and driver_allocs.
func Trace(name string, rows []Row) trace.Trace {
	tr := trace.Trace{Name: name, HasRequested: true, HasAllocs: true}
	for _, r := range rows {
		tr.Rows = append(tr.Rows, trace.Row{T: round(r.T), Used: r.Used(), Requested: r.ShimBytes, Allocs: r.Allocs})
	}
	return tr
}

// WriteTrace writes the trace with comment lines first (the trace reader
// skips lines starting with #). An empty recording gives the header only.
func WriteTrace(w io.Writer, name string, comments []string, rows []Row) error {
	bw := bufio.NewWriter(w)
	for _, c := range comments {
		fmt.Fprintf(bw, "# %s\n", c)
	}
	if err := trace.Write(bw, Trace(name, rows)); err != nil {
		return err
	}
	return bw.Flush()
}

// SamplesHeader is the side table's header.
const SamplesHeader = "unix,t,source,shim_bytes,shim_peak_bytes,driver_allocs,driver_frees,processes,nvml_process_bytes,nvml_device_bytes"

// WriteSamples writes every source's figures, one row per sample; unix is
// the sample's wall-clock time (start + t), to line it up with what the
// command logs itself.
func WriteSamples(w io.Writer, start time.Time, rows []Row) error {
	t0 := float64(start.UnixNano()) / 1e9
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, SamplesHeader)
	for _, r := range rows {
		fmt.Fprintf(bw, "%.3f,%s,%s,%d,%d,%d,%d,%d,%d,%d\n", t0+r.T, strconv.FormatFloat(round(r.T), 'f', -1, 64), r.Source,
			r.ShimBytes, r.ShimPeak, r.Allocs, r.Frees, r.Processes, r.NVMLProcess, r.NVMLDevice)
	}
	return bw.Flush()
}

// round keeps milliseconds.
func round(t float64) float64 { return float64(int64(t*1000+0.5)) / 1000 }
