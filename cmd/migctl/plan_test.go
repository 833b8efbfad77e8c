package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func runPlanJSON(t *testing.T, args ...string) planResult {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"plan", "--output", "json"}, args...)
	if code := runMain(full, &out, &errb); code != 0 {
		t.Fatalf("migctl %s: exit %d: %s", strings.Join(full, " "), code, errb.String())
	}
	var res planResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	return res
}

const plainSet = "1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb"

// The reachability facts of issue 2, reproduced through the command line.
func TestPlanReproducesReachabilityFacts(t *testing.T) {
	cases := []struct {
		counted string
		maximal int
		perSlot [7]int
	}{
		{plainSet, 19, [7]int{6, 6, 6, 6, 6, 6, 12}},
		{"", 78, [7]int{21, 21, 21, 21, 22, 22, 33}}, // every profile: 1g.10gb counts too
	}
	for _, c := range cases {
		for slot, want := range c.perSlot {
			args := []string{"--simulate", "a100-40gb"}
			if c.counted != "" {
				args = append(args, "--counted", c.counted)
			}
			res := runPlanJSON(t, append(args, fmt.Sprintf("1g.5gb@%d", slot))...)
			g := res.GPUs[0]
			if g.Maximal != c.maximal || g.Reachable != want {
				t.Errorf("counted %q, 1g.5gb at %d: %d/%d reachable, want %d/%d", c.counted, slot, g.Reachable, g.Maximal, want, c.maximal)
			}
			if len(res.Instances) != 1 || res.Instances[0].Placement.Start != slot || res.Steps != 1 {
				t.Errorf("1g.5gb@%d: instances %+v steps %d", slot, res.Instances, res.Steps)
			}
		}
	}
}

func TestPlanFillsSmallProfilesFromTheTop(t *testing.T) {
	ops := []string{"--simulate", "a100-40gb"}
	for i := 0; i < 7; i++ {
		ops = append(ops, "1g.5gb")
	}
	// The plain count fills from the top.
	res := runPlanJSON(t, append([]string{"--policy", "reachability"}, ops...)...)
	starts := map[int]int{} // alloc -> start
	for _, in := range res.Instances {
		starts[*in.Alloc] = in.Placement.Start
	}
	for k := 1; k <= 7; k++ {
		if starts[k] != 7-k {
			t.Fatalf("allocate %d at slot %d, want %d (all: %v)", k, starts[k], 7-k, starts)
		}
	}
	// First-fit, the baseline, fills from the bottom.
	ff := runPlanJSON(t, append([]string{"--policy", "first-fit"}, ops...)...)
	for _, in := range ff.Instances {
		if *in.Alloc == 1 && in.Placement.Start != 0 {
			t.Fatalf("first-fit put the first 1g.5gb at %d, want 0", in.Placement.Start)
		}
	}
}

func TestPlanReuseReleaseAndWait(t *testing.T) {
	res := runPlanJSON(t, "--simulate", "a100-40gb", "4g.20gb", "3g.20gb", "1g.5gb", "free:2", "3g.20gb", "2g.10gb")
	// 4g + 3g fill the GPU, the 1g waits; after free:2 the 3g is reused with
	// no NVML step, and the 2g must wait again.
	if res.Steps != 2 {
		t.Fatalf("steps = %d, want 2 (two creates, then a reuse)", res.Steps)
	}
	if fmt.Sprint(res.Waiting) != "[3 5]" {
		t.Fatalf("waiting = %v, want [3 5]", res.Waiting)
	}
	for _, in := range res.Instances {
		if in.Profile == "3g.20gb" && (in.Alloc == nil || *in.Alloc != 4 || in.State != "in-use") {
			t.Fatalf("3g.20gb should be held by allocate 4: %+v", in)
		}
	}
}

func TestPlanReclaimsIdleInstances(t *testing.T) {
	res := runPlanJSON(t, "--simulate", "a100-40gb", "1g.5gb", "1g.5gb", "free:1", "free:2", "7g.40gb")
	if len(res.Instances) != 1 || res.Instances[0].Profile != "7g.40gb" || res.Steps != 5 {
		t.Fatalf("want the idle 1g instances destroyed for the 7g (2 creates + 2 destroys + 1 create): %+v steps %d", res.Instances, res.Steps)
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	args := []string{"--simulate", "a100-40gb:2,h100-80gb", "1g.5gb", "3g.20gb", "2g.20gb", "free:1", "1g.10gb", "7g.80gb"}
	a, b := runPlanJSON(t, args...), runPlanJSON(t, args...)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("two runs differ:\n%s\n%s", ja, jb)
	}
}

func TestPlanBadInputExitsTwo(t *testing.T) {
	cases := map[string][]string{
		"unknown model":     {"--simulate", "v100-16gb", "1g.5gb"},
		"unknown profile":   {"--simulate", "a100-40gb", "1g.6gb"},
		"free of nothing":   {"--simulate", "a100-40gb", "1g.5gb", "free:2"},
		"double free":       {"--simulate", "a100-40gb", "1g.5gb", "free:1", "free:1"},
		"bad free":          {"--simulate", "a100-40gb", "free:x"},
		"illegal pin":       {"--simulate", "a100-40gb", "3g.20gb@2"},
		"no such GPU":       {"--simulate", "a100-40gb", "3g.20gb@3:0"},
		"no operations":     {"--simulate", "a100-40gb"},
		"missing simulate":  {"1g.5gb"},
		"bad policy":        {"--simulate", "a100-40gb", "--policy", "best", "1g.5gb"},
		"bad counted":       {"--simulate", "a100-40gb", "--counted", "9g.1gb", "1g.5gb"},
		"free of a waiting": {"--simulate", "a30-24gb", "4g.24gb", "1g.6gb", "free:2"},
	}
	for name, args := range cases {
		var out, errb bytes.Buffer
		code := runMain(append([]string{"plan"}, args...), &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code != 2 || msg == "" || strings.Contains(msg, "\n") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line", name, code, msg)
		}
	}
}

func TestPlanTextDrawsTheLayout(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"plan", "--simulate", "a100-40gb", "3g.20gb", "1g.5gb", "free:2"}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	text := out.String()
	for _, want := range []string{"GPU 0  NVIDIA A100-SXM4-40GB", "3g.20gb", "1g.5gb", "in-use", "idle", "layouts reachable"} {
		if !strings.Contains(text, want) {
			t.Errorf("picture lacks %q:\n%s", want, text)
		}
	}
}
