package estimator

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const gib = 1 << 30

// h100 is an H100-80GB's profile list as NVML reports it (MiB rounded to GiB).
var h100 = []ProfileSize{
	{Name: "7g.80gb", MemoryBytes: 80 * gib, Slices: 7},
	{Name: "4g.40gb", MemoryBytes: 40 * gib, Slices: 4},
	{Name: "3g.40gb", MemoryBytes: 40 * gib, Slices: 3},
	{Name: "2g.20gb", MemoryBytes: 20 * gib, Slices: 2},
	{Name: "1g.20gb", MemoryBytes: 20 * gib, Slices: 1},
	{Name: "1g.10gb+me", MemoryBytes: 10 * gib, Slices: 1},
	{Name: "1g.10gb", MemoryBytes: 10 * gib, Slices: 1},
}

func TestEstimateDeclared(t *testing.T) {
	e := &Estimator{GPU: "H100-80GB", Profiles: h100, ContextBytes: gib / 2, Margin: 0.1}
	c, err := e.Estimate(Workload{Annotations: map[string]string{AnnotationMemory: "7Gi"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "7.0 GiB declared + 0.5 GiB context → 1g.10gb on H100-80GB"; c.Explanation != want {
		t.Errorf("explanation %q, want %q", c.Explanation, want)
	}
	if c.Profile.Name != "1g.10gb" || c.Source != SourceDeclared {
		t.Errorf("choice %+v", c)
	}
	// 9.6 GiB + 0.5 GiB no longer fits 10 GiB: the next is one slice with 20.
	c, _ = e.Estimate(Workload{Annotations: map[string]string{AnnotationMemory: "9.6Gi"}})
	if c.Profile.Name != "1g.20gb" {
		t.Errorf("9.6Gi: %s, want 1g.20gb", c.Profile.Name)
	}
}

func TestEstimateBadAnnotationIsAnError(t *testing.T) {
	e := &Estimator{Profiles: h100}
	_, err := e.Estimate(Workload{Annotations: map[string]string{AnnotationMemory: "7GB"}, Model: &Model{Params: 1, DTypeBytes: 2}})
	if err == nil || !strings.Contains(err.Error(), AnnotationMemory) || !strings.Contains(err.Error(), "GB") {
		t.Errorf("err %v: a bad annotation must fail, not fall back to the formula", err)
	}
}

func TestEstimateFormulaAndHistory(t *testing.T) {
	hist, err := OpenHistory(filepath.Join(t.TempDir(), "h.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := &Estimator{GPU: "H100-80GB", Profiles: h100, ContextBytes: gib / 2, Margin: 0.1, History: hist}
	w := Workload{Key: "ns/llm/server", Model: &Model{Params: 7e9, DTypeBytes: 2, Batch: 1, Seq: 4096, Layers: 32, Hidden: 4096}}
	c, err := e.Estimate(w)
	if err != nil {
		t.Fatal(err)
	}
	// (14e9 + 2 GiB)·1.1 + 0.5 GiB ≈ 17.2 GiB → 1g.20gb.
	if c.Source != SourceFormula || c.Profile.Name != "1g.20gb" {
		t.Errorf("formula: %+v", c)
	}
	// A run that peaked at 21 GiB proves the formula low.
	if err := hist.Record(w.Key, 21*gib, time.Now()); err != nil {
		t.Fatal(err)
	}
	c, err = e.Estimate(w)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != SourceHistory || c.Profile.Name != "3g.40gb" || !strings.Contains(c.Explanation, "over 15.0 GiB formula") {
		t.Errorf("history: %+v", c)
	}
	// History alone is enough.
	c, err = e.Estimate(Workload{Key: w.Key})
	if err != nil || c.Source != SourceHistory {
		t.Errorf("history only: %+v %v", c, err)
	}
}

func TestEstimateNoHintAndTooLarge(t *testing.T) {
	e := &Estimator{GPU: "A30-24GB", Profiles: []ProfileSize{{Name: "1g.6gb", MemoryBytes: 6 * gib, Slices: 1}, {Name: "4g.24gb", MemoryBytes: 24 * gib, Slices: 4}}}
	if _, err := e.Estimate(Workload{}); !errors.Is(err, ErrNoHint) {
		t.Errorf("no hint: %v", err)
	}
	c, err := e.Estimate(Workload{Annotations: map[string]string{AnnotationMemory: "30Gi"}})
	if !errors.Is(err, ErrTooLarge) || c.Profile.Name != "4g.24gb" || !strings.Contains(c.Explanation, "A30-24GB") {
		t.Errorf("too large: %+v %v", c, err)
	}
	if _, err := (&Estimator{}).Estimate(Workload{}); err == nil {
		t.Error("no profiles accepted")
	}
}

func TestPickTiesAndOrder(t *testing.T) {
	if p, ok := Pick(h100, 10*gib); !ok || p.Name != "1g.10gb" {
		t.Errorf("10 GiB: %s, want the plain 1g.10gb", p.Name)
	}
	if p, ok := Pick(h100, 30*gib); !ok || p.Name != "3g.40gb" {
		t.Errorf("30 GiB: %s, want 3g.40gb (fewer slices than 4g.40gb)", p.Name)
	}
	if _, ok := Pick(nil, 1); ok {
		t.Error("empty list fits")
	}
	sorted := append([]ProfileSize(nil), h100...)
	SortProfiles(sorted)
	if sorted[0].Name != "1g.10gb" || sorted[len(sorted)-1].Name != "7g.80gb" {
		t.Errorf("sorted %v", sorted)
	}
}
