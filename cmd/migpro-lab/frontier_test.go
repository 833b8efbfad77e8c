package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/migpro/migpro/replay"
)

// `migpro-lab replay --targets --sweep-reserve-after` places the agent's
// reservation rule, at each limit, against the baselines: one
// configuration's cells are checked against replay.Targets run directly
// with the agent's policies (migpro, and migpro+reserve-after, the agent
// with --reserve-after 2m), and the chart is written.
func TestReplayFrontierIsTheAgentsRule(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 14 configurations under 7 policies")
	}
	dir := t.TempDir()
	out, errs, code := replayCmd(t, "--targets", "--seeds", "2", "--openb", "", "--sweep-reserve-after", "0,2m,4x+large", "--plot", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	never, twoMin, trial := "migpro, never reserve (default)", "migpro, reserve after 2m", "migpro, reserve after 4x+large *"
	for _, want := range []string{"| " + never + " |", "| " + twoMin + " |", "| " + trial + " |", "| static * |", "| nvidia-dra * |",
		"pooled over every configuration (14 rows;", "where static sets the 7g bar and the rule acts (8 rows;"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, twoMin+" *") {
		t.Errorf("the agent's own rule is marked simulator only:\n%s", out)
	}
	jct := cells(t, out, "mean JCT ÷ best dynamic baseline's")
	p95 := cells(t, out, "7g p95 arrival-to-start ÷ best baseline's")
	for _, c := range []struct{ policy, column string }{{"migpro", never}, {"migpro+reserve-after", twoMin}} {
		ps, err := replay.ParsePolicies(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		for _, conf := range replay.TargetConfigs("") {
			if conf.Name != "online/a100-40gb/4gpu/load0.8" {
				continue
			}
			row, err := replay.Targets(conf, []uint64{2}, ps[0])
			if err != nil {
				t.Fatal(err)
			}
			best := math.Min(row.JCT["first-fit"], math.Min(row.JCT["nvidia-dra"], row.JCT["hami"]))
			if got, want := jct[conf.Name][c.column], fmt.Sprintf("%.3f", 1/best); got != want {
				t.Errorf("%s, %s: mean JCT ÷ best dynamic baseline %s, want %s (replay.Targets)", conf.Name, c.column, got, want)
			}
			if got, want := p95[conf.Name][c.column], fmt.Sprintf("%.3f", row.P95["7g"]); got != want {
				t.Errorf("%s, %s: 7g p95 ÷ best baseline %s, want %s (replay.Targets)", conf.Name, c.column, got, want)
			}
		}
	}
	// The rule acts on four GPUs and, below partitioner.MinReserveGPUs,
	// not at all.
	if a, b := p95["online/a100-40gb/4gpu/load0.8"][never], p95["online/a100-40gb/4gpu/load0.8"][twoMin]; a == b {
		t.Errorf("4 GPUs: 7g p95 %s with and without reservations; the rule did not act", a)
	}
	for _, conf := range []string{"online/a100-40gb/1gpu/load0.9", "online/a100-40gb/2gpu/load0.8"} {
		if a, b := jct[conf][never], jct[conf][twoMin]; a != b {
			t.Errorf("%s: mean JCT ratio %s without reservations, %s with: a node under %d GPUs reserved", conf, a, b, 3)
		}
	}
	// The pooled figure is the geometric mean of the rows'.
	logs, n := 0.0, 0
	for _, byPoint := range jct {
		v, err := strconv.ParseFloat(byPoint[never], 64)
		if err != nil {
			t.Fatal(err)
		}
		logs, n = logs+math.Log(v), n+1
	}
	i := strings.Index(out, "| "+never+" | ")
	if i < 0 {
		t.Fatalf("no pooled line of %s", never)
	}
	pooled, err := strconv.ParseFloat(strings.Fields(out[i+len(never)+4:])[0], 64)
	if want := math.Exp(logs / float64(n)); err != nil || math.Abs(pooled-want) > 0.0015 { // the cells are rounded to 0.001
		t.Errorf("pooled mean JCT %v (%v), want the geometric mean of the rows, %.4f", pooled, err, want)
	}
	png, err := os.ReadFile(filepath.Join(dir, "frontier.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("frontier.png: %v, %d bytes", err, len(png))
	}
}

// cells reads the per-configuration table whose heading starts with title:
// configuration → point → cell.
func cells(t *testing.T, out, title string) map[string]map[string]string {
	t.Helper()
	i := strings.Index(out, "\n"+title)
	if i < 0 {
		t.Fatalf("no table %q:\n%s", title, out)
	}
	lines := strings.Split(out[i+1:], "\n")
	if len(lines) < 4 {
		t.Fatalf("table %q is cut short", title)
	}
	head := strings.Split(strings.Trim(lines[2], "| "), " | ")
	table := map[string]map[string]string{}
	for _, l := range lines[4:] {
		if !strings.HasPrefix(l, "| ") {
			break
		}
		f := strings.Split(strings.Trim(l, "| "), " | ")
		if len(f) != len(head) {
			t.Fatalf("row %q has %d cells, the heading %d", l, len(f), len(head))
		}
		table[f[0]] = map[string]string{}
		for k := 1; k < len(f); k++ {
			table[f[0]][head[k]] = f[k]
		}
	}
	if len(table) == 0 {
		t.Fatalf("table %q has no rows", title)
	}
	return table
}

// With --policies migpro/exact the sweep is the same rule for pods: its
// "never" column is the agent's pod default (replay.Targets of
// migpro/exact), and every limit is simulator only, since the agent
// reserves for local callers alone; on four busy GPUs the rule acts.
func TestReplayFrontierForPods(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 14 configurations under 6 policies")
	}
	out, errs, code := replayCmd(t, "--targets", "--seeds", "2", "--openb", "", "--policies", "migpro/exact", "--sweep-reserve-after", "0,2m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	never, twoMin := "migpro/exact (pods), never reserve (default)", "migpro/exact (pods), reserve after 2m *"
	for _, want := range []string{"| " + never + " |", "| " + twoMin + " |", "simulator only where it reserves"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, never+" *") {
		t.Errorf("the agent's pod default is marked simulator only:\n%s", out)
	}
	ps, err := replay.ParsePolicies("migpro/exact")
	if err != nil {
		t.Fatal(err)
	}
	p95 := cells(t, out, "7g p95 arrival-to-start ÷ best baseline's")
	const busy = "online/a100-40gb/4gpu/load0.9"
	for _, conf := range replay.TargetConfigs("") {
		if conf.Name != busy {
			continue
		}
		row, err := replay.Targets(conf, []uint64{2}, ps[0])
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p95[busy][never], fmt.Sprintf("%.3f", row.P95["7g"]); got != want {
			t.Errorf("%s: 7g p95 ÷ best baseline %s, want %s (replay.Targets of migpro/exact)", busy, got, want)
		}
	}
	if a, b := p95[busy][never], p95[busy][twoMin]; a == b {
		t.Errorf("%s: 7g p95 %s with and without reservations for pods; the rule did not act", busy, a)
	}
}

func TestReplayFrontierUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--sweep-reserve-after", "2m"},                                         // only with --targets
		{"--targets", "--sweep-reserve-after", "2m", "--policies", "first-fit"}, // migpro's rule or the pods' only
		{"--targets", "--sweep-reserve-after", "2q"},
		{"--targets", "--sweep-reserve-after", "0,never"}, // the same point twice
		{"--targets", "--sweep-reserve-after", "2m+big"},
		{"--targets", "--sweep-reserve-after", "0+large"},
		{"--targets", "--sweep-reserve-after", "-1m"},
		{"--targets", "--sweep-reserve-after", "2m", "--seeds", "40"}, // held out
		{"--targets", "--plot", "/tmp/x"},                             // a chart only of the frontier
	} {
		if _, errs, code := replayCmd(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", args, code, errs)
		}
	}
}
