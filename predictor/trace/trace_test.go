package trace_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor/trace"
)

func TestReadErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "x.csv: empty file"},
		{"t,used\n1,2\n", `x.csv:1: unknown column "used"`},
		{"t,requested_bytes\n1,2\n", "must name t and used_bytes"},
		{"t,used_bytes,t\n", `column "t" repeated`},
		{"t,used_bytes\n", "no samples"},
		{"t,used_bytes\n1,100\n2,abc\n", `x.csv:3: used_bytes "abc" is not a whole number`},
		{"t,used_bytes\n1,100\n2,-5\n", `x.csv:3: used_bytes "-5"`},
		{"t,used_bytes,driver_allocs\n1,100,3\n2,100,x\n", `x.csv:3: driver_allocs "x" is not a whole number of calls`},
		{"t,used_bytes\n1,100\nNaN,5\n", `x.csv:3: t "NaN" is not a finite number`},
		{"t,used_bytes\n1,100\n2,5,7\n", "x.csv:3: 3 fields, header has 2"},
		{"t,used_bytes\n5,100\n4,100\n", "x.csv:3: t=4 goes back from 5"},
		{"t,used_bytes\n1,\"100\n", "x.csv"},
	} {
		_, err := trace.Read(strings.NewReader(tc.in), "x.csv")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Read(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestReadOptionalColumnsAnyOrder(t *testing.T) {
	in := "# comment\nreserved_bytes,t,used_bytes,requested_bytes\n8,0.5,4,\n9,1.5,5,6\n"
	tr, err := trace.Read(strings.NewReader(in), "y")
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Row{{T: 0.5, Used: 4, Reserved: 8}, {T: 1.5, Used: 5, Requested: 6, Reserved: 9}}
	if !tr.HasRequested || !tr.HasReserved || len(tr.Rows) != 2 || tr.Rows[0] != want[0] || tr.Rows[1] != want[1] {
		t.Fatalf("got %+v", tr)
	}
	if s := tr.Rows[1].Sample(); s.T != 1.5 || s.Used != 5 || s.Requested != 6 {
		t.Errorf("sample %+v", s)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, cols := range [][2]bool{{false, false}, {true, true}} {
		tr := trace.Trace{Name: "rt", HasRequested: cols[0], HasReserved: cols[1], HasAllocs: cols[1]}
		for i := range 50 {
			r := trace.Row{T: float64(i) * 0.1, Used: uint64(i) << 30}
			if cols[0] {
				r.Requested, r.Reserved = r.Used*2, r.Used*3
			}
			if cols[1] {
				r.Allocs = uint64(i) * 7
			}
			tr.Rows = append(tr.Rows, r)
		}
		var buf bytes.Buffer
		if err := trace.Write(&buf, tr); err != nil {
			t.Fatal(err)
		}
		back, err := trace.Read(&buf, "rt")
		if err != nil {
			t.Fatal(err)
		}
		for i := range tr.Rows {
			if back.Rows[i] != tr.Rows[i] {
				t.Fatalf("row %d: %+v, want %+v", i, back.Rows[i], tr.Rows[i])
			}
		}
	}
}

func TestReadFile(t *testing.T) {
	if _, err := trace.ReadFile(filepath.Join(t.TempDir(), "missing.csv")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	tr, err := trace.ReadFile("../testdata/qwen2-linear.csv")
	if err != nil || len(tr.Rows) != 120 {
		t.Fatalf("checked-in trace: %v, %d rows", err, len(tr.Rows))
	}
}

// FuzzRead: any input either parses into rows that obey the format's rules or
// fails with an error naming the input; it never panics.
func FuzzRead(f *testing.F) {
	f.Add("t,used_bytes\n1,2\n")
	f.Add("t,used_bytes,requested_bytes,reserved_bytes\n1,2,3,4\n2,3,,5\n")
	f.Add("reserved_bytes,t,used_bytes\n\"1\",2,3\n")
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := trace.Read(strings.NewReader(in), "fz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fz") {
				t.Fatalf("error without the name: %v", err)
			}
			return
		}
		if len(tr.Rows) == 0 {
			t.Fatal("no rows and no error")
		}
		for i := 1; i < len(tr.Rows); i++ {
			if tr.Rows[i].T < tr.Rows[i-1].T {
				t.Fatalf("t goes back at row %d", i)
			}
		}
	})
}
