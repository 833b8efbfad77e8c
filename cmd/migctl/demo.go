package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"strings"

	"github.com/migpro/migpro/partitioner"
)

func init() {
	register("demo", "watch the partitioner serve a stream of requests on a simulated node", runDemo)
}

const defaultDemoNode = "a100-40gb:2,h100-80gb:1"

func runDemo(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	spec := fs.String("simulate", defaultDemoNode, "simulated node, MODEL[:COUNT][,MODEL[:COUNT]…]")
	seed := fs.Int64("seed", 7, "seed of the request stream and simulated UUIDs")
	n := fs.Int("requests", 40, "number of allocate and release operations")
	noPredict := fs.Bool("no-predict", false, "skip the second act (prediction and move on the real agent)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 {
		return usagef("--requests must be at least 1")
	}
	node, cleanup, err := newSimNode(*spec, *seed)
	if err != nil {
		return err
	}
	defer cleanup()
	part, err := partitioner.New(node, partitioner.WithLogger(quietLogger()))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Act 1: the partitioner on a simulated node %s, policy %s, %d operations (seed %d)\n\n", *spec, partitioner.DefaultPolicy.Name(), *n, *seed)
	ops := demoStream(part.Profiles(), *n, *seed)
	got, err := replayDemo(part, ops, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nServed %d requests, %d had to wait, %d NVML steps. Final layouts:\n\n", got.served, got.waited, got.steps)
	drawLayouts(stdout, part.GPUs(), part.Instances())
	fmt.Fprintln(stdout, "Legend: [profile | idle or in-use | MIG UUID prefix], · = free memory slot.")

	// The same stream under first-fit placement, for comparison.
	ffNode, ffCleanup, err := newSimNode(*spec, *seed)
	if err != nil {
		return err
	}
	defer ffCleanup()
	ff, err := partitioner.New(ffNode, partitioner.WithPolicy(partitioner.FirstFit{}), partitioner.WithLogger(quietLogger()))
	if err != nil {
		return err
	}
	base, err := replayDemo(ff, ops, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nThe same stream with first-fit placement: served %d, %d had to wait, %d NVML steps.\n", base.served, base.waited, base.steps)
	if *noPredict {
		return nil
	}
	return demoPrediction(stdout, *seed)
}

type demoStats struct{ served, waited, steps int }

// replayDemo runs the operations, narrating each to w when w is not nil.
func replayDemo(part *partitioner.Partitioner, ops []planOp, w io.Writer) (demoStats, error) {
	var st demoStats
	say := func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format, args...)
		}
	}
	held := map[int]string{}
	allocs := 0
	for i, op := range ops {
		prefix := fmt.Sprintf("[%3d] ", i+1)
		if op.profile == "" {
			uuid, ok := held[op.free]
			if !ok {
				continue
			}
			inst, err := part.Release(uuid)
			if err != nil {
				return st, err
			}
			delete(held, op.free)
			say("%srelease #%-3d %-9s GPU %d slot %d -> idle, kept for reuse\n", prefix, op.free, inst.Profile, inst.GPU, inst.Placement.Start)
			continue
		}
		allocs++
		inst, plan, err := part.Allocate(context.Background(), op.profile, owner(allocs))
		st.steps += len(plan.Steps)
		switch {
		case errors.Is(err, partitioner.ErrMustWait):
			st.waited++
			say("%salloc   #%-3d %-9s must wait: no room without touching in-use instances\n", prefix, allocs, op.profile)
			continue
		case err != nil:
			return st, err
		}
		st.served++
		held[allocs] = inst.UUID
		say("%salloc   #%-3d %-9s GPU %d slot %d: %s\n", prefix, allocs, op.profile, inst.GPU, inst.Placement.Start, describePlan(plan))
	}
	return st, nil
}

func describePlan(p partitioner.Plan) string {
	if p.Reuse != nil {
		return "reused an idle instance, no NVML call"
	}
	destroys := 0
	for _, s := range p.Steps {
		if s.Kind == partitioner.StepDestroy {
			destroys++
		}
	}
	what := "created"
	if destroys > 0 {
		what = fmt.Sprintf("destroyed %d idle, created", destroys)
	}
	return fmt.Sprintf("%s; layouts reachable on the GPU %d -> %d", what, p.Before, p.Reachable)
}

// demoStream makes a deterministic mix of requests, mostly small profiles as
// in inference fleets, with releases of earlier allocations in between.
// profiles come smallest first, as Partitioner.Profiles lists them.
func demoStream(profiles []string, n int, seed int64) []planOp {
	r := rand.New(rand.NewSource(seed))
	var plain []string
	for _, p := range profiles {
		if !strings.Contains(p, "+") {
			plain = append(plain, p)
		}
	}
	var ops []planOp
	allocs := 0
	live := []int{}
	for len(ops) < n {
		if len(live) > 0 && r.Float64() < 0.35 {
			i := r.Intn(len(live))
			ops = append(ops, planOp{free: live[i]})
			live = append(live[:i], live[i+1:]...)
			continue
		}
		// Weight small profiles: index drawn from a triangular distribution.
		i := min(r.Intn(len(plain)), r.Intn(len(plain)))
		allocs++
		live = append(live, allocs)
		ops = append(ops, planOp{profile: plain[i]})
	}
	return ops
}
