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
	// The anchors: where the reference runs ran out of memory.
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

// Both rates read one run as the agent merges it: every NVML row of the
// 1 Hz series is in the 10 Hz series at the same time (the poll's context
// plus pool dominates the shim's pool alone there), the 10 Hz series never
// drops below the latest poll, a growing run ends at the same OOM sample at
// both rates, and a seed renders the same run every time.
func TestRealFamiliesSampleOneRunAtBothRates(t *testing.T) {
	for _, f := range append(tracegen.RealFamilies(), tracegen.HeldOutFamilies()...) {
		shim, nvml := f.Generate(7, tracegen.ShimHz), f.Generate(7, tracegen.NVMLHz)
		at := map[float64]uint64{}
		for _, r := range shim.Rows {
			at[r.T] = r.Used
		}
		if len(nvml.Rows) == 0 || len(shim.Rows) < 10*len(nvml.Rows) {
			t.Fatalf("%s: %d shim rows, %d NVML rows", f.Name, len(shim.Rows), len(nvml.Rows))
		}
		for _, r := range nvml.Rows {
			if u, ok := at[r.T]; !ok || u != r.Used {
				t.Fatalf("%s: NVML row t=%v used %d is not in the merged series (%d, %v)", f.Name, r.T, r.Used, u, ok)
			}
		}
		var poll uint64
		j := 0
		for _, r := range shim.Rows {
			for j < len(nvml.Rows) && nvml.Rows[j].T <= r.T {
				poll = nvml.Rows[j].Used
				j++
			}
			if r.Used < poll {
				t.Fatalf("%s: t=%v used %d under the latest poll %d", f.Name, r.T, r.Used, poll)
			}
		}
		again := f.Generate(7, tracegen.ShimHz)
		if len(again.Rows) != len(shim.Rows) || again.Rows[len(again.Rows)-1] != shim.Rows[len(shim.Rows)-1] {
			t.Fatalf("%s: not deterministic", f.Name)
		}
		o1, over := tracegen.OOM(shim)
		o2, over2 := tracegen.OOM(nvml)
		if over != f.Growing || over2 != f.Growing || o1 != o2 {
			t.Errorf("%s: OOM %v at %v (10 Hz), %v at %v (1 Hz), want growing %v", f.Name, over, o1, over2, o2, f.Growing)
		}
	}
}
