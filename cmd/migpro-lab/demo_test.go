package main

import (
	"bytes"
	"fmt"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/internal/quietlog"
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
	m := regexp.MustCompile(`migpro served (\d+) of (\d+) requests? \((\d+) after waiting\), (\d+) withdrawn while waiting, (\d+) still waiting`).FindStringSubmatch(a)
	if m == nil {
		t.Fatalf("no summary:\n%s", a)
	}
	n := make([]int, len(m))
	for i := 1; i < len(m); i++ {
		n[i], _ = strconv.Atoi(m[i])
	}
	served, requests, later, withdrawn, waiting := n[1], n[2], n[3], n[4], n[5]
	allocs := strings.Count(a, "] alloc ")
	if requests != allocs || served+withdrawn+waiting != requests || served == 0 {
		t.Fatalf("summary says %d of %d served, %d withdrawn, %d waiting; narration has %d allocations", served, requests, withdrawn, waiting, allocs)
	}
	if got := strings.Count(a, "served after waiting"); got != later {
		t.Fatalf("summary says %d served after waiting, narration shows %d", later, got)
	}
	// Every operation has its numbered line: none skipped.
	for i := 1; i <= 30; i++ {
		if !strings.Contains(a, fmt.Sprintf("[%3d] ", i)) {
			t.Fatalf("operation %d has no line:\n%s", i, a)
		}
	}
	if strings.Contains(full, " 1 requests") || strings.Contains(full, " 1 NVML steps") {
		t.Fatal("a count of 1 takes the singular")
	}
	if !strings.Contains(a, "with first-fit placement") {
		t.Fatal("no first-fit comparison")
	}
	var out, errb bytes.Buffer
	if code := runMain([]string{"demo", "--simulate", "b100"}, &out, &errb); code != 2 {
		t.Fatalf("unknown model: exit %d", code)
	}
}

// make demo runs seed 39: its stream must show migpro serving clearly more
// than first-fit on the default node (24 against 21, the Makefile says so).
func TestDemoSeedShowsPlacement(t *testing.T) {
	var st [2]demoStats
	for k, pol := range []partitioner.Policy{partitioner.Migpro{}, partitioner.FirstFit{}} {
		node, cleanup, err := ctl.NewSimNode(defaultDemoNode, 39)
		if err != nil {
			t.Fatal(err)
		}
		defer cleanup()
		part, err := partitioner.New(node, partitioner.WithPolicy(pol), partitioner.WithLogger(quietlog.New()))
		if err != nil {
			t.Fatal(err)
		}
		if st[k], err = replayDemo(part, demoStream(part.Profiles(), 40, 39), nil); err != nil {
			t.Fatal(err)
		}
	}
	if st[0].served != 24 || st[1].served != 21 {
		t.Errorf("seed 39: migpro served %d (%d waits), first-fit %d (%d waits); want 24 and 21", st[0].served, st[0].waited, st[1].served, st[1].waited)
	}
}

func TestPlural(t *testing.T) {
	if got := (demoStats{requests: 1, served: 1, steps: 1}).summary(); !strings.Contains(got, "of 1 request (") || !strings.Contains(got, "1 NVML step") || strings.Contains(got, "steps") {
		t.Errorf("summary %q", got)
	}
}
