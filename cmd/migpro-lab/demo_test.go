package main

import (
	"bytes"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/partitioner"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestDemoNarratesAndDrawsTheDefaultNode(t *testing.T) {
	run := func() string {
		var out, errb bytes.Buffer
		if code := runMain([]string{"demo", "--requests", "30"}, &out, &errb); code != 0 {
			t.Fatalf("demo: exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	full := run()
	a, act2, ok := strings.Cut(full, "Act 2:")
	if !ok {
		t.Fatalf("no second act:\n%s", full)
	}
	// Act 1 is deterministic; act 2 runs in real time on the real agent.
	if b, _, _ := strings.Cut(run(), "Act 2:"); a != b {
		t.Fatal("two demo runs with the same seed differ")
	}
	if !regexp.MustCompile(`MARK at \d+% of the instance: .* -> move to 1g\.10gb`).MatchString(act2) ||
		!strings.Contains(act2, "restarted on 1g.10gb") || strings.Contains(act2, "ran out of memory before") {
		t.Fatalf("act 2 did not predict and move the server:\n%s", act2)
	}
	if n := strings.Count(a, "layouts reachable\n"); n != 3 {
		t.Fatalf("demo drew %d GPUs, want 3 (2x A100-40GB + 1x H100-80GB):\n%s", n, a)
	}
	m := regexp.MustCompile(`Served (\d+) requests, (\d+) had to wait`).FindStringSubmatch(a)
	if m == nil {
		t.Fatalf("no summary:\n%s", a)
	}
	served, _ := strconv.Atoi(m[1])
	waited, _ := strconv.Atoi(m[2])
	allocs := strings.Count(a, "] alloc ")
	if served+waited != allocs || served == 0 {
		t.Fatalf("summary says %d served + %d waited, narration has %d allocations", served, waited, allocs)
	}
	if !strings.Contains(a, "with first-fit placement") {
		t.Fatal("no first-fit comparison")
	}
	var out, errb bytes.Buffer
	if code := runMain([]string{"demo", "--simulate", "b100"}, &out, &errb); code != 2 {
		t.Fatalf("unknown model: exit %d", code)
	}
}

// make demo runs seed 22: its stream must show migpro serving clearly more
// than first-fit on the default node (18 against 15, the Makefile says so).
func TestDemoSeedShowsPlacement(t *testing.T) {
	var st [2]demoStats
	for k, pol := range []partitioner.Policy{partitioner.Migpro{}, partitioner.FirstFit{}} {
		node, cleanup, err := ctl.NewSimNode(defaultDemoNode, 22)
		if err != nil {
			t.Fatal(err)
		}
		defer cleanup()
		part, err := partitioner.New(node, partitioner.WithPolicy(pol), partitioner.WithLogger(ctl.QuietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		if st[k], err = replayDemo(part, demoStream(part.Profiles(), 40, 22), nil); err != nil {
			t.Fatal(err)
		}
	}
	if st[0].served != 18 || st[1].served != 15 {
		t.Errorf("seed 22: migpro served %d (%d waits), first-fit %d (%d waits); want 18 and 15", st[0].served, st[0].waited, st[1].served, st[1].waited)
	}
}
