package main

import (
	"fmt"
	"regexp"
	"strconv"
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
	// Every target has its verdict, and every row missed is named once
	// per target with the baseline that wins there.
	verdict := regexp.MustCompile(`(?m)^- mean JCT within 1% of every baseline's or better: met in (\d+) of (\d+) rows$`)
	m := verdict.FindStringSubmatch(out)
	if m == nil || m[2] != fmt.Sprint(len(confs)) {
		t.Fatalf("no mean-JCT verdict over %d rows:\n%s", len(confs), out)
	}
	met, _ := strconv.Atoi(m[1])
	block := out[strings.Index(out, m[0]):]
	block = block[:strings.Index(block, "\n- NVML steps per job")]
	if n := strings.Count(block, "\n    missed online/"); n != len(confs)-met {
		t.Errorf("%d rows met, %d named as missed, of %d:\n%s", met, n, len(confs), block)
	}
	bold := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| online/") && strings.Contains(l, "**") {
			bold++
		}
	}
	if bold != len(confs)-met {
		t.Errorf("%d rows with a baseline in bold, %d missed", bold, len(confs)-met)
	}
	for _, want := range []string{"- NVML steps per job at most half of nvidia-dra's over the whole set: ", "- fragmentation waits no more than first-fit's: met in ",
		"- p95 arrival-to-start of 4g and 7g no worse than any baseline's: met in ", "- decision time under 50 µs per request on a busy 8-GPU node: not measured by the replay",
		"seeds [2] (a list)", "migpro serves as the agent serves a local caller that accepts a larger instance"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestReplayTargetsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--targets", "--mix", "online"},
		{"--targets", "--seeds", "one"},
		{"--targets", "--policies", "migpro,first-fit"},
		{"--targets", "--openb", "/nonexistent"},
		{"--targets", "--seeds", "34"},     // held out: only the whole set, as held
		{"--targets", "--seeds", "7,8,48"}, // the same
	} {
		if _, errs, code := replayCmd(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", args, code, errs)
		}
	}
}
