package replay

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestCompareRatios(t *testing.T) {
	results := []*Result{
		{Policy: "sequential", Makespan: 400, MeanJCT: 300},
		{Policy: "static:all-1g", Makespan: 150, MeanJCT: 100},
		{Policy: "migpro", Makespan: 100, MeanJCT: 50, Ratio: 1.25},
		{Policy: "migpro/B-fifo", Makespan: 90, MeanJCT: 80},
		{Policy: "nvidia-dra", Makespan: 110, MeanJCT: 55},
		{Policy: "hami", Makespan: 95, MeanJCT: 45},
		{Policy: "migpro+predict", Makespan: 100, MeanJCT: 50, Ratio: 1.25},
	}
	got := Compare(results)
	want := []Comparison{
		{Migpro: "migpro", Other: "sequential", Speedup: 4, JCT: 6},
		{Migpro: "migpro", Other: "static:all-1g", Speedup: 1.5, JCT: 2},
		{Migpro: "migpro", Other: "nvidia-dra", Speedup: 1.1, JCT: 1.1},
		{Migpro: "migpro", Other: "hami", Speedup: 0.95, JCT: 0.9},
		{Migpro: "migpro+predict", Other: "sequential", Speedup: 4, JCT: 6},
		{Migpro: "migpro+predict", Other: "static:all-1g", Speedup: 1.5, JCT: 2},
		{Migpro: "migpro+predict", Other: "migpro", Speedup: 1, JCT: 1},
		{Migpro: "migpro+predict", Other: "nvidia-dra", Speedup: 1.1, JCT: 1.1},
		{Migpro: "migpro+predict", Other: "hami", Speedup: 0.95, JCT: 0.9},
	}
	if len(got) != len(want) {
		t.Fatalf("comparisons %+v, want %+v", got, want)
	}
	for i := range want {
		if g := got[i]; g.Migpro != want[i].Migpro || g.Other != want[i].Other || math.Abs(g.Speedup-want[i].Speedup) > 1e-9 || math.Abs(g.JCT-want[i].JCT) > 1e-9 {
			t.Errorf("comparison %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, results); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"\nmigpro vs sequential", "\nmigpro vs lower bound", "\nmigpro vs hami", "\nmigpro+predict * vs lower bound"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("comparison lacks %q:\n%s", line, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "6.00×\n") || !strings.Contains(buf.String(), "1.25× (25% above)") {
		t.Errorf("comparison lacks its figures:\n%s", buf.String())
	}
	// On more than one node the agent's policy is marked too: the node
	// choice is the replay's.
	for _, r := range results {
		r.Nodes = 3
	}
	buf.Reset()
	if err := WriteComparison(&buf, results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nmigpro * vs sequential") {
		t.Errorf("multi-node comparison does not mark migpro:\n%s", buf.String())
	}
}

func TestTableColumns(t *testing.T) {
	var buf bytes.Buffer
	r := &Result{Policy: "migpro", Runs: make([]RunRecord, 10), Detail: "reachability", Makespan: 1234.4, Throughput: 0.5, MeanJCT: 99.6, P95JCT: 200,
		MemUtil: 0.456, Reconfigs: 7, Waits: 5, Replaceable: 1, Fragmented: 2, Restarts: 3, Marks: 2, LostWork: 42, LowerBound: 1000, Ratio: 1.2344}
	if err := WriteTable(&buf, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	fields := strings.Fields(lines[1])
	want := []string{"migpro", "1234", "0.5000", "100", "200", "45.6%", "7", "0.70", "5", "1", "2", "3", "(2)", "42", "1.23", "reachability"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("row %q, want fields %q", lines[1], want)
	}
	if !strings.HasPrefix(lines[2], "lower bound") || !strings.Contains(lines[2], "1000") {
		t.Errorf("bound row %q", lines[2])
	}
}
