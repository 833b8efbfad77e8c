package tracegen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/migpro/migpro/predictor/trace"
	"github.com/migpro/migpro/predictor/tracegen"
)

// The checked-in traces must be exactly what the generator makes, so a change
// to a family cannot leave stale files behind (regenerate with go generate
// ./predictor).
func TestCheckedInTracesMatchGenerator(t *testing.T) {
	for _, f := range tracegen.Families() {
		var want bytes.Buffer
		if err := trace.Write(&want, f.Generate(tracegen.Seed)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "testdata", f.Name+".csv"))
		if err != nil {
			t.Fatalf("%v (run go generate ./predictor)", err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("testdata/%s.csv differs from the generator (run go generate ./predictor)", f.Name)
		}
	}
}

func TestFamiliesHaveTheirShape(t *testing.T) {
	for _, f := range tracegen.Families() {
		for seed := range uint64(50) {
			tr := f.Generate(seed)
			if len(tr.Rows) != tracegen.Steps {
				t.Fatalf("%s: %d rows", f.Name, len(tr.Rows))
			}
			first := -1
			for i, r := range tr.Rows {
				if r.Used > tracegen.Capacity && first < 0 {
					first = i + 1
				}
				if tr.HasRequested && r.Requested <= r.Used {
					t.Fatalf("%s seed %d t=%d: requested %d not above used %d", f.Name, seed, i+1, r.Requested, r.Used)
				}
			}
			switch {
			case f.Growing && first != f.OOM:
				t.Errorf("%s seed %d: first over capacity at %d, want %d", f.Name, seed, first, f.OOM)
			case !f.Growing && first >= 0:
				t.Errorf("%s seed %d: exceeds capacity at %d", f.Name, seed, first)
			}
		}
	}
	// The anchors from the thesis.
	for name, oom := range map[string]int{"qwen2-linear": 94, "llama3-linear": 72} {
		f, err := tracegen.Lookup(name)
		if err != nil || f.OOM != oom {
			t.Errorf("%s: %v, OOM %d, want %d", name, err, f.OOM, oom)
		}
	}
	if _, err := tracegen.Lookup("nope"); err == nil {
		t.Error("Lookup of an unknown family succeeded")
	}
}

func TestSeedsDiffer(t *testing.T) {
	f, _ := tracegen.Lookup("bursts")
	a, b := f.Generate(1), f.Generate(2)
	same := 0
	for i := range a.Rows {
		if a.Rows[i] == b.Rows[i] {
			same++
		}
	}
	if same > len(a.Rows)/2 {
		t.Errorf("seeds 1 and 2 share %d of %d rows", same, len(a.Rows))
	}
}

// Both rates read one run: the NVML series is every tenth tick of the shim's
// (up to the shim's first sample over capacity, where a growing series ends),
// and a seed renders the same run every time.
func TestRealFamiliesSampleOneRunAtBothRates(t *testing.T) {
	for _, f := range tracegen.RealFamilies() {
		shim, nvml := f.Generate(7, tracegen.ShimHz), f.Generate(7, tracegen.NVMLHz)
		at := map[float64]uint64{}
		for _, r := range shim.Rows {
			at[r.T] = r.Used
		}
		if len(nvml.Rows) == 0 || len(shim.Rows) < 9*len(nvml.Rows) {
			t.Fatalf("%s: %d shim rows, %d NVML rows", f.Name, len(shim.Rows), len(nvml.Rows))
		}
		end := shim.Rows[len(shim.Rows)-1].T
		for _, r := range nvml.Rows {
			if r.T > end {
				break
			}
			if u, ok := at[r.T]; !ok || u != r.Used {
				t.Fatalf("%s: NVML row t=%v used %d is not the shim's (%d, %v)", f.Name, r.T, r.Used, u, ok)
			}
		}
		again := f.Generate(7, tracegen.ShimHz)
		if len(again.Rows) != len(shim.Rows) || again.Rows[len(again.Rows)-1] != shim.Rows[len(shim.Rows)-1] {
			t.Fatalf("%s: not deterministic", f.Name)
		}
		if _, over := tracegen.OOM(shim); over != f.Growing {
			t.Errorf("%s: reaches capacity %v, want %v", f.Name, over, f.Growing)
		}
	}
}
