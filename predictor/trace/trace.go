package trace

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/migpro/migpro/predictor"
)

// Row is one sample of a trace.
type Row struct {
	T         float64
	Used      uint64
	Requested uint64
	Reserved  uint64
	// Allocs is the driver allocation calls so far (the shim's count).
	Allocs uint64
}

// Sample is the part of the row the predictor reads.
func (r Row) Sample() predictor.Sample {
	return predictor.Sample{T: r.T, Used: r.Used, Requested: r.Requested, Allocs: r.Allocs}
}

// Trace is a named series of rows.
type Trace struct {
	Name string
	Rows []Row
	// HasRequested, HasReserved and HasAllocs say which optional columns
	// the file had.
	HasRequested bool
	HasReserved  bool
	HasAllocs    bool
}

const (
	colT         = "t"
	colUsed      = "used_bytes"
	colRequested = "requested_bytes"
	colReserved  = "reserved_bytes"
	colAllocs    = "driver_allocs"
)

// ReadFile reads a trace file; errors name the file and, for bad rows, the line.
func ReadFile(path string) (Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return Trace{}, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read parses a trace. name is used in errors and as the trace's name.
func Read(r io.Reader, name string) (Trace, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1 // row width is checked here, with a clearer message
	cr.ReuseRecord = true
	cr.Comment = '#'
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return Trace{}, fmt.Errorf("%s: empty file, want a header %q", name, "t,used_bytes")
	}
	if err != nil {
		return Trace{}, fmt.Errorf("%s: %w", name, err)
	}
	idx, tr, err := parseHeader(header, name)
	if err != nil {
		return Trace{}, err
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Trace{}, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		row, err := parseRow(rec, idx, len(header))
		if err != nil {
			return Trace{}, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if n := len(tr.Rows); n > 0 && row.T < tr.Rows[n-1].T {
			return Trace{}, fmt.Errorf("%s:%d: t=%v goes back from %v", name, line, row.T, tr.Rows[n-1].T)
		}
		tr.Rows = append(tr.Rows, row)
	}
	if len(tr.Rows) == 0 {
		return Trace{}, fmt.Errorf("%s: no samples after the header", name)
	}
	return tr, nil
}

// columns maps each known column to its position, -1 when absent.
type columns struct{ t, used, requested, reserved, allocs int }

func parseHeader(header []string, name string) (columns, Trace, error) {
	idx := columns{-1, -1, -1, -1, -1}
	tr := Trace{Name: name}
	for i, h := range header {
		var slot *int
		switch strings.TrimSpace(h) {
		case colT:
			slot = &idx.t
		case colUsed:
			slot = &idx.used
		case colRequested:
			slot = &idx.requested
			tr.HasRequested = true
		case colReserved:
			slot = &idx.reserved
			tr.HasReserved = true
		case colAllocs:
			slot = &idx.allocs
			tr.HasAllocs = true
		default:
			return idx, tr, fmt.Errorf("%s:1: unknown column %q (want t,used_bytes[,requested_bytes,reserved_bytes,driver_allocs])", name, h)
		}
		if *slot >= 0 {
			return idx, tr, fmt.Errorf("%s:1: column %q repeated", name, h)
		}
		*slot = i
	}
	if idx.t < 0 || idx.used < 0 {
		return idx, tr, fmt.Errorf("%s:1: header must name t and used_bytes, got %q", name, strings.Join(header, ","))
	}
	return idx, tr, nil
}

func parseRow(rec []string, idx columns, width int) (Row, error) {
	if len(rec) != width {
		return Row{}, fmt.Errorf("%d fields, header has %d", len(rec), width)
	}
	var row Row
	t, err := strconv.ParseFloat(strings.TrimSpace(rec[idx.t]), 64)
	if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
		return Row{}, fmt.Errorf("t %q is not a finite number", rec[idx.t])
	}
	row.T = t
	if row.Used, err = parseWhole(rec, idx.used, colUsed, "bytes", false); err != nil {
		return Row{}, err
	}
	if row.Requested, err = parseWhole(rec, idx.requested, colRequested, "bytes", true); err != nil {
		return Row{}, err
	}
	if row.Reserved, err = parseWhole(rec, idx.reserved, colReserved, "bytes", true); err != nil {
		return Row{}, err
	}
	if row.Allocs, err = parseWhole(rec, idx.allocs, colAllocs, "calls", true); err != nil {
		return Row{}, err
	}
	return row, nil
}

// parseWhole reads column i of rec as a whole number of unit (bytes,
// calls); an absent column, or an empty field of an optional one, is 0.
func parseWhole(rec []string, i int, col, unit string, optional bool) (uint64, error) {
	if i < 0 {
		return 0, nil
	}
	s := strings.TrimSpace(rec[i])
	if s == "" && optional {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a whole number of %s", col, rec[i], unit)
	}
	return v, nil
}

// Write renders a trace in the format Read accepts, with the optional columns
// the trace says it has.
func Write(w io.Writer, tr Trace) error {
	bw := bufio.NewWriter(w)
	header := colT + "," + colUsed
	if tr.HasRequested {
		header += "," + colRequested
	}
	if tr.HasReserved {
		header += "," + colReserved
	}
	if tr.HasAllocs {
		header += "," + colAllocs
	}
	fmt.Fprintln(bw, header)
	for _, r := range tr.Rows {
		line := strconv.FormatFloat(r.T, 'g', -1, 64) + "," + strconv.FormatUint(r.Used, 10)
		if tr.HasRequested {
			line += "," + strconv.FormatUint(r.Requested, 10)
		}
		if tr.HasReserved {
			line += "," + strconv.FormatUint(r.Reserved, 10)
		}
		if tr.HasAllocs {
			line += "," + strconv.FormatUint(r.Allocs, 10)
		}
		fmt.Fprintln(bw, line)
	}
	return bw.Flush()
}
