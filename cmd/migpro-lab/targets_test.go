package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/migpro/migpro/replay"
)

// `migpro-lab replay --targets` prints, per configuration, the figures
// replay.Targets computes, which BenchmarkTargets reports: the row of one
// configuration is checked against a direct call.
func TestReplayTargetsIsTheBenchmarksFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 14 configurations under 5 policies")
	}
	out, errs, code := replayCmd(t, "--targets", "--seeds", "2", "--openb", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	confs := replay.TargetConfigs("")
	if n := strings.Count(out, "| online/"); n != len(confs) {
		t.Errorf("%d online rows, want %d:\n%s", n, len(confs), out)
	}
	var c replay.TargetConfig
	for _, x := range confs {
		if x.Name == "online/a100-40gb/2gpu/load0.9" {
			c = x
		}
	}
	ps, err := replay.ParsePolicies("migpro")
	if err != nil {
		t.Fatal(err)
	}
	row, err := replay.Targets(c, []uint64{2}, ps[0])
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("| %s | ", c.Name)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, want) {
			line = l
		}
	}
	for _, base := range replay.TargetBaselines {
		if v := fmt.Sprintf("%.3f", row.JCT[base]); !strings.Contains(line, v) {
			t.Errorf("row %q lacks %s's ratio %s", line, base, v)
		}
	}
	if v := fmt.Sprintf("%d (%d)", row.Frag, row.FirstFitFrag); !strings.Contains(line, v) {
		t.Errorf("row %q lacks the fragmentation waits %s", line, v)
	}
	if !strings.Contains(out, "mean JCT within 1% of every baseline or better: ") {
		t.Errorf("no summary line:\n%s", out)
	}
}

func TestReplayTargetsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--targets", "--mix", "online"},
		{"--targets", "--seeds", "one"},
		{"--targets", "--policies", "migpro,first-fit"},
		{"--targets", "--openb", "/nonexistent"},
	} {
		if _, errs, code := replayCmd(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", args, code, errs)
		}
	}
}
