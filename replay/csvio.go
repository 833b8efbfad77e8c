package replay

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// CSV columns. id, arrival_s, full_runtime_s and peak_gib are required; the
// rest default as documented in docs/replay-workloads.md.
var csvColumns = []string{
	"id", "arrival_s", "full_runtime_s", "scaling", "start_gib", "peak_gib",
	"grow_from", "grow_to", "declared_gib", "profile", "key", "pcie_gbps", "iters",
}

var csvRequired = map[string]bool{"id": true, "arrival_s": true, "full_runtime_s": true, "peak_gib": true}

// maxCSVJobs bounds a replay so a wrong file fails clearly.
const maxCSVJobs = 1000000

// ReadCSV reads jobs from a CSV file with a header row naming its columns in
// any order. Unknown columns are an error (a typo would otherwise be a
// silently defaulted field). Lines starting with # are comments.
func ReadCSV(r io.Reader) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("csv: empty file: want a header row (%s)", strings.Join(csvColumns, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		known := false
		for _, c := range csvColumns {
			known = known || c == h
		}
		if !known {
			return nil, fmt.Errorf("csv: unknown column %q (known: %s)", h, strings.Join(csvColumns, ", "))
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("csv: column %q appears twice", h)
		}
		col[h] = i
	}
	for c := range csvRequired {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("csv: missing required column %q", c)
		}
	}
	var jobs []Job
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(jobs) >= maxCSVJobs {
			return nil, fmt.Errorf("csv: more than %d jobs", maxCSVJobs)
		}
		j, err := parseRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("csv line %d: %w", line, err)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("csv: no jobs after the header")
	}
	return jobs, nil
}

func parseRow(rec []string, col map[string]int) (Job, error) {
	get := func(name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	num := func(name string, def float64) (float64, error) {
		s := get(name)
		if s == "" {
			if csvRequired[name] {
				return 0, fmt.Errorf("%s is empty", name)
			}
			return def, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%s %q is not a finite number", name, s)
		}
		return v, nil
	}
	gibs := func(name string, def float64) (uint64, error) {
		v, err := num(name, def)
		if err != nil {
			return 0, err
		}
		if v < 0 || v > 1<<20 {
			return 0, fmt.Errorf("%s %v: want 0 to %d GiB", name, v, 1<<20)
		}
		return uint64(math.Round(v * GiB)), nil
	}
	j := Job{ID: get("id"), Profile: get("profile"), Key: get("key")}
	if j.ID == "" {
		return j, fmt.Errorf("id is empty")
	}
	if j.Key == "" {
		j.Key = j.ID
	}
	var err error
	fields := []struct {
		name string
		def  float64
		dst  *float64
	}{
		{"arrival_s", 0, &j.Arrival}, {"full_runtime_s", 0, &j.FullRuntime}, {"scaling", 1, &j.Scaling},
		{"grow_from", 0, &j.Mem.GrowFrom}, {"grow_to", 1, &j.Mem.GrowTo}, {"pcie_gbps", 0, &j.PCIe},
	}
	for _, f := range fields {
		if *f.dst, err = num(f.name, f.def); err != nil {
			return j, err
		}
	}
	if j.Mem.Peak, err = gibs("peak_gib", 0); err != nil {
		return j, err
	}
	if j.Mem.Start, err = gibs("start_gib", gib(j.Mem.Peak)); err != nil {
		return j, err
	}
	if j.Declared, err = gibs("declared_gib", gib(j.Mem.Peak)); err != nil {
		return j, err
	}
	iters, err := num("iters", 100)
	if err != nil {
		return j, err
	}
	if iters != math.Trunc(iters) || iters < 1 || iters > 100000 {
		return j, fmt.Errorf("iters %v: want a whole number from 1 to 100000", iters)
	}
	j.Iters = int(iters)
	return j, nil
}

// WriteCSV writes jobs in the format ReadCSV reads, every column present,
// with numbers that read back to the same values.
func WriteCSV(w io.Writer, jobs []Job) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvColumns); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, j := range jobs {
		rec := []string{
			j.ID, f(j.Arrival), f(j.FullRuntime), f(j.Scaling), f(gib(j.Mem.Start)), f(gib(j.Mem.Peak)),
			f(j.Mem.GrowFrom), f(j.Mem.GrowTo), f(gib(declared(&j))), j.Profile, j.Key, f(j.PCIe), strconv.Itoa(j.iters()),
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
